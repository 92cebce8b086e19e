"""The platform's CrossGuard policy pack: rules.py holds the rules, pack.py adapts them to
pulumi_policy, __main__.py serves them (`pulumi preview --policy-pack infra/policy`)."""
