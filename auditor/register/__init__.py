"""The register of audits and findings that live across reviews (docs/governance.md).

`store.Register` is the database (SQLite by default, PostgreSQL for a shared register); `lifecycle` the pure rules
of a finding's life (opened, responded, accepted, remediated, overdue); `schema` the tables and their migrations.
SQLAlchemy is imported only when a register is opened.
"""
