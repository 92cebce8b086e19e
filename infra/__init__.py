"""The platform as code: one Pulumi stack per team (infra/teams/<team>.yaml), plus a platform stack."""
