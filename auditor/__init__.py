"""auditor: audits learning-to-rank models and writes evidence a regulator can check."""

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """`from auditor import Audit` (auditor/api.py), imported on first use: `import auditor` stays light;
    `auditor.load(run_folder)` is `AuditResult.load`."""
    if name in ("Audit", "AuditResult", "load"):
        from auditor import api

        return api.AuditResult.load if name == "load" else getattr(api, name)
    raise AttributeError(f"module 'auditor' has no attribute {name!r}")
