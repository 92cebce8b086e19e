"""Process-level faults on the lab, each with inject and undo, rolled back whatever ends a drill.

    from chaos.faults import Faults, Lab, make_fault

    lab = Lab.from_env(env)                  # DAGGER_LAB_DIR, DAGGER_LAB_PORT_BASE
    with Faults("drill.faults.json", lab) as faults:
        faults.run(make_fault("broker-kill", lab, target="primary", failure_percentage=50, seed=7,
                              downtime="30s"))

The kinds are the catalogue's (chaos/catalog.py); `python -m chaos.faults --help` for manual use.
"""

from .base import Fault, parse_duration
from .errors import FaultError, Interrupted, NotInScope, RollbackError
from .journal import Faults, Journal, rollback
from .kinds import IMPLEMENTED, fault_class, fault_from_dict, in_scope, make_fault, not_yet
from .targets import Lab, choose

__all__ = [
    "Fault",
    "FaultError",
    "Faults",
    "IMPLEMENTED",
    "Interrupted",
    "Journal",
    "Lab",
    "NotInScope",
    "RollbackError",
    "choose",
    "fault_class",
    "fault_from_dict",
    "in_scope",
    "make_fault",
    "not_yet",
    "parse_duration",
    "rollback",
]
