"""The web portal (GO-JEK's Datlantis): an analyst signs in through the platform's OpenID Connect
provider and works with their team's daggers from a browser, through the same operations the
`dagger` command line calls (dagger_runtime.lifecycle.operations); nothing is done here that the
CLI does differently.

    access.py   who the signed-in user acts for: their groups -> the teams whose grants name them
    config.py   the portal's settings (its URL, the provider, the registry, the clusters)
    app.py      the Flask application: sign-in, pages and their JSON, every one authorized by team
    serve.py    `dagger portal`: the application under waitress
"""
