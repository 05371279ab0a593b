"""The ExpEther pool manager: the system manager of seed 002 §3.3.1 as a web service.

An administrator assigns the devices of an I/O pool to hosts by VLAN id; every host and device
bridge sits in an inventory; each change reaches the ExpEther system through a backend and
shows up on the host as native PCIe hot-plug and hot-remove events (Table 3.1); the bridges
report counters periodically for monitoring; every change and every refused change is in an
audit log. State is kept in SQLite and survives a restart.

Modules: ``rules`` (limits, validation, errors), ``store`` (the SQLite schema and queries),
``backend`` (what the manager drives: the simulated virtual switch), ``software`` (the software
ExpEther system of ``expether-system``), ``manager`` (the operations), ``api`` (the REST API and the page),
``server`` (``tca expether pool serve``), ``client`` (the HTTP client of the CLI).
"""
