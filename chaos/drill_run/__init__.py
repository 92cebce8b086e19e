"""`drill run` in parts, one module per phase of a run; chaos/runner.py's DrillRun is made of them
(each part a mixin over the run's shared state, set up in DrillRun.__init__):

- common: what every part uses: the lab's access, a deployed dagger, the waits, Abort
- preflight: the checks before anything is touched (the lab answers, one drill at a time, room)
- steps: the plan's steps carried out (deploy, feed, inject, undo, the failover commands)
- failover: the moves and the recovery they are timed by (first batches, standbys, RTO steps)
- verdict: the sink's windows against the ledger's, per dagger, and each case's figures
- report: report.json, its HTML and the drill history
"""
