"""Command line: thin commands that load, call one library function, and map errors to exit codes.

Exit codes: 0 done (no finding at the --fail-on level), 1 done with such a finding, 2 bad input, 3 internal error.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperGroup
from typer.exceptions import Abort, TyperException

from auditor import __version__
from auditor.core.display import terminal
from auditor.core.errors import InputError
from auditor.core.files import write_new
from auditor.core.spans import parse_span
from auditor.core.words import counted


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill`, a CI job's timeout, a service manager) as an exception in the main thread, so what runs on
    Ctrl-C runs on it too: `finally` blocks, `write_run` removing its hidden temporary folder. By default SIGTERM
    ends the process on the spot and left that folder behind. A KeyboardInterrupt, so code that stops cleanly on
    Ctrl-C stops cleanly on it."""


STOP_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}  # 128 + the signal's number, as shells report it


@dataclass
class _Stop:
    """The stop signal whose exception has not reached the top (`_stopped`) yet, and its re-delivery."""

    active: bool = False
    pending: int | None = None
    timer: threading.Timer | None = None
    hook: Callable[[Any], object] = sys.unraisablehook


_STOP = _Stop()


def _raise_stop(signum: int, frame: object) -> None:
    """The handler of SIGINT and SIGTERM while a command runs: raise in the main thread."""
    if _STOP.timer is not None:  # this raise is the re-delivery
        _STOP.timer.cancel()
        _STOP.timer = None
    _STOP.pending = signum
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _unraisable(unraisable: Any) -> None:
    """Raised where Python cannot pass it on (a weakref or cffi callback, a `__del__`: WeasyPrint runs many while the
    PDF renders), an interrupt was printed as "Exception ignored" with a traceback, then lost, and the audit went on
    to the end. Not printed: the signal is delivered again 10 ms later, until it lands where it stops the command."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt) and _STOP.active and _STOP.pending is not None:
        if _STOP.timer is None:
            _STOP.timer = threading.Timer(0.01, _redeliver, (_STOP.pending,))
            _STOP.timer.daemon = True
            _STOP.timer.start()
        return
    _STOP.hook(unraisable)


def _redeliver(signum: int) -> None:
    if _STOP.active and _STOP.pending == signum:
        os.kill(os.getpid(), signum)


@contextlib.contextmanager
def _stop_signals() -> Iterator[None]:
    """While a command runs, Ctrl-C and SIGTERM raise (`_raise_stop`), so every command's cleanup runs and its one
    line and exit code (130, 143) follow. Installed by the command line only (the Python API leaves its host's
    handlers alone), and only over the default handlers (SIG_IGN under nohup, a host's own handler stay)."""
    if _STOP.active or threading.current_thread() is not threading.main_thread():
        yield
        return
    installed = {}
    for signum, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
        if signal.getsignal(signum) == default:
            installed[signum] = signal.signal(signum, _raise_stop)
    _STOP.active, _STOP.pending, _STOP.hook = True, None, sys.unraisablehook
    sys.unraisablehook = _unraisable
    try:
        yield
    finally:
        _STOP.active = False
        if _STOP.timer is not None:
            _STOP.timer.cancel()
            _STOP.timer = None
        sys.unraisablehook = _STOP.hook
        for signum, handler in installed.items():
            signal.signal(signum, handler)


def _stopped(exc: BaseException | None, words: str) -> int:
    """One line for Ctrl-C or SIGTERM (`exc`, else the pending signal), and its exit code: 130 or 143."""
    signum = signal.SIGTERM if isinstance(exc, Terminated) or (exc is None and _STOP.pending == signal.SIGTERM) \
        else signal.SIGINT
    _STOP.pending = None
    typer.echo(f"{'terminated' if signum == signal.SIGTERM else 'interrupted'}: {words}", err=True)
    return STOP_CODES[signum]


class OneLineErrors(TyperGroup):
    """Usage errors (bad option values, unknown options) as one `error:` line and exit 2, like all bad input; Ctrl-C
    and SIGTERM as one line and exit 130 / 143 wherever they land."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        with _stop_signals():
            try:
                code = super().main(args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False,
                                    windows_expand_args=windows_expand_args, **extra)
            except TyperException as exc:
                if type(exc).__name__ == "NoArgsIsHelpError" and hasattr(exc, "show"):  # bare `auditor`: the help
                    exc.show()
                    code = 2
                else:
                    ctx = getattr(exc, "ctx", None)
                    where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
                    typer.echo(f"error: {terminal(exc.format_message() + where)}", err=True)
                    code = 2
            except Abort:
                typer.echo("aborted: nothing was written", err=True)
                code = 1
            if _STOP.pending is not None:  # swallowed where it landed, or silenced by typer (exit 130 for both)
                code = _stopped(None, "received as the command ended")
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: Any) -> Any:
        """Ctrl-C or SIGTERM outside a command's `_guard` (its imports, its last lines), which typer would turn into
        a silent exit 130."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            raise typer.Exit(_stopped(exc, "stopped")) from None


app = typer.Typer(cls=OneLineErrors, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Audit learning-to-rank models and write the evidence regulators ask for.")


def entry() -> None:
    """The `auditor` command (and `python -m auditor`): `app`, then out of the process without tearing the
    interpreter down. Everything the command writes is written, closed and renamed into place before it returns;
    what is left is freeing its objects one by one, about 2 s after a wide audit (a last collection of ~480,000
    objects, then the modules and the extension libraries). The exit handlers still run (logging, temporary
    folders, multiprocessing), and the streams are flushed; an error that escapes `app` exits as Python would."""
    import atexit

    try:
        app(prog_name="auditor")
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing more reaches it
            stream.flush()
    os._exit(code or 0)
policies_app = typer.Typer(no_args_is_help=True, help="List and show policy packs.")
app.add_typer(policies_app, name="policies")
findings_app = typer.Typer(no_args_is_help=True, help="Findings across reviews (the register): list them, record "
                                                        "a response or a risk acceptance.")
app.add_typer(findings_app, name="findings")
register_app = typer.Typer(no_args_is_help=True, help="The register of audits.")
app.add_typer(register_app, name="register")
roles_app = typer.Typer(no_args_is_help=True, help="Who may decide what: a roles file signed under an approver root.")
app.add_typer(roles_app, name="roles")

T = TypeVar("T")


class FailOn(StrEnum):
    fail = "fail"
    error = "error"
    warn = "warn"
    never = "never"


def _guard(action: Callable[[], T], *, debug: bool = False) -> T:
    """Bad input: one line on stderr, exit 2. Anything unexpected: one line and exit 3 (traceback with --debug)."""
    if debug:
        warnings.resetwarnings()
    try:
        return action()
    except InputError as exc:
        typer.echo(f"error: {terminal(exc.one_line())}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated) from the command line's handler
        raise typer.Exit(_stopped(exc, "nothing was written")) from None
    except Exception as exc:
        if _STOP.pending is not None:  # raised while stopping (a library turned the interrupt into its own error)
            raise typer.Exit(_stopped(None, "nothing was written")) from None
        if debug:
            raise
        first = str(exc).splitlines()[0] if str(exc) else ""
        typer.echo(f"internal error: {type(exc).__name__}: {terminal(first)} (run again with --debug for the "
                   "traceback)",
                   err=True)
        raise typer.Exit(3) from None


@contextlib.contextmanager
def _progress(quiet: bool) -> Iterator[Any]:
    if quiet:
        from auditor.evidence.base import Progress

        yield Progress()
        return
    from auditor.run.progress import for_terminal

    with for_terminal() as bar:  # bars on a terminal, plain lines otherwise (CI, nohup)
        yield bar


SpecArg = Annotated[Path, typer.Argument(help="The audit spec (YAML).", show_default=False)]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress (bars or lines) and no notes.")]
Debug = Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors and library warnings.")]


class ExecutorKind(StrEnum):
    auto = "auto"
    serial = "serial"
    processes = "processes"
    dask = "dask"


def _executor_override(spec: Path, jobs: int | None, kind: ExecutorKind | None, scheduler: str | None) -> Any:
    """The spec's executor with the command line's changes, or None when the command line changes nothing."""
    if jobs is None and kind is None and scheduler is None:
        return None
    from auditor.inputs.spec import ExecutorSpec, load_spec

    base = load_spec(spec)[0].executor
    changes: dict[str, Any] = {}
    if jobs is not None:
        changes["jobs"] = jobs
        if kind is None and scheduler is None and base.kind != "dask":
            changes["kind"] = "serial" if jobs == 1 else "processes"
    if kind is not None:
        changes["kind"] = kind.value
    if scheduler is not None:
        changes.update(kind="dask", address=scheduler)
    merged = {**base.model_dump(), **changes}
    if merged["kind"] != "dask":
        merged["address"] = None
    return ExecutorSpec.model_validate(merged)


@app.command()
def report(
    spec: Annotated[Path | None, typer.Argument(help="The audit spec (YAML); none with --from-run.",
                                                show_default=False)] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Folder for the run folder "
                                             "(default: the spec's output.dir).")] = None,
    from_run: Annotated[Path | None, typer.Option("--from-run", help="Rerun a run folder's audit from the inputs it "
                                                  "archived (needs --out; writes nothing inside the run).",
                                                  show_default=False)] = None,
    seed: Annotated[int | None, typer.Option(help="Override the spec's seed.", min=0)] = None,
    fail_on: Annotated[FailOn, typer.Option("--fail-on", help="Exit 1 when a finding reaches this level.")] =
    FailOn.fail,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Cores to use: worker processes for "
                                             "per-query work, threads elsewhere (default: the spec's executor, "
                                             "else every CPU; 1 = serial on one core).")] = None,
    executor: Annotated[ExecutorKind | None, typer.Option("--executor", help="Override the spec's executor kind.")]
    = None,
    scheduler: Annotated[str | None, typer.Option("--scheduler", help="Dask scheduler address "
                                                  "(tcp://host:8786); implies --executor dask.")] = None,
    register: Annotated[str | None, typer.Option("--register", help="The register: an SQLite file, a "
                                                 "postgresql:// URL, or `off` (default: the spec's `register:`, "
                                                 "else register.sqlite in the output folder).")] = None,
    timestamp_url: Annotated[str | None, typer.Option("--timestamp-url", help="An RFC 3161 TSA for the signed "
                                                      "run's trusted time (default: the spec's signing."
                                                      "timestamp_url, else $AUDITOR_TSA_URL).",
                                                      show_default=False)] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Also write the findings as JUnit XML to this file "
                                               "(replaced if it exists), one testcase a rule, for CI test reports "
                                               "(docs/ci.md).", show_default=False)] = None,
    mlflow: Annotated[bool, typer.Option("--mlflow", help="Also log the audit to MLflow: the opinion and each "
                                         "rule's status as tags, the judged numbers as metrics, the run folder as "
                                         "artifacts (the active run, $MLFLOW_RUN_ID's, or a new one; tracking URI "
                                         "from the spec's model.tracking_uri or $MLFLOW_TRACKING_URI).")] = False,
    document: Annotated[list[str] | None, typer.Option("--document", help="The documents to render (repeatable; "
                                                    "instead of the spec's output.documents): report, "
                                                    "ll144-summary, dsa-audit.", show_default=False)] = None,
    quiet: Quiet = False,
    debug: Debug = False,
) -> None:
    """Run the audit a spec describes; write evidence.json and report.html into a new run folder, and record it
    in the register."""
    from auditor.judging.policy import exit_code
    from auditor.run.engine import run_audit

    rerun = None
    if from_run is not None:
        from auditor.run.archive import plan_rerun

        if spec is not None or out is None:
            typer.echo("error: --from-run RUN takes no spec (the run archived it) and needs --out DIR (a new folder, "
                       "never the run's)", err=True)
            raise typer.Exit(2)
        rerun = _guard(lambda: plan_rerun(from_run), debug=debug)
        spec = rerun.spec
        register = register or "off"  # a rerun is a reproduction, not a review of the system
    if spec is None:
        typer.echo("error: give the audit spec (or --from-run RUN --out DIR)", err=True)
        raise typer.Exit(2)
    if junit is not None:  # a path that cannot be written is refused before the audit runs
        from auditor.commands.junit import check_target

        _guard(lambda: check_target(junit), debug=debug)
    tracking_uri = None
    if mlflow:  # installed, and somewhere to log to, before the audit runs
        from auditor.commands import mlflow_log

        tracking_uri = _guard(lambda: mlflow_log.check_ready(spec), debug=debug)

    def action() -> Any:
        with _progress(quiet) as progress:
            return run_audit(spec, out=out, seed=seed, progress=progress,
                             executor=_executor_override(spec, jobs, executor, scheduler),
                             notify=None if quiet else lambda note: typer.echo(f"note: {terminal(note)}", err=True),
                             register=register, timestamp_url=timestamp_url, rerun=rerun,
                             documents=list(dict.fromkeys(document)) if document else None)

    run = _guard(action, debug=debug)
    counts: dict[str, int] = {}
    for finding in run.findings:
        counts[finding.status] = counts.get(finding.status, 0) + 1
    if not quiet:
        shown = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no rules applied"
        if run.unjudged:
            shown += f"; {len(run.unjudged)} detection{'s' * (len(run.unjudged) != 1)} not judged by any rule"
        typer.echo(f"opinion: {run.opinion} ({shown})", err=True)
        for sentence in (run.budget or {}).get("choices", []):
            typer.echo(f"budget: {terminal(sentence)}", err=True)
    shown_file = next((run.run_dir / name for name in ("report.html", "report.pdf", "ll144-summary.html",
                                                       "ll144-summary.pdf", "dsa-audit.html", "dsa-audit.pdf")
                       if (run.run_dir / name).exists()),
                      run.run_dir / "evidence.json")
    typer.echo(str(shown_file))
    if junit is not None:  # after the run, from its evidence.json
        from auditor.commands.junit import write_results

        _guard(lambda: write_results(junit, run.run_dir, fail_on=fail_on.value), debug=debug)
    if mlflow:
        try:
            logged_to = mlflow_log.log_audit(run, tracking_uri=tracking_uri)
        except InputError as exc:  # the run is written; logging it again needs another audit (or MLflow's own tools)
            typer.echo(f"error: {terminal(exc.one_line())} (the run folder was written)", err=True)
            raise typer.Exit(2) from None
        if not quiet:
            typer.echo(f"mlflow: logged to run {logged_to}", err=True)
    if run.register_error is not None:  # the run is written; the register is an index of it, rebuilt from folders
        typer.echo(f"error: {terminal(run.register_error.one_line())} (the run folder was written; once the "
                   "register is fixed, `auditor register rebuild` indexes it)", err=True)
        raise typer.Exit(2)
    raise typer.Exit(exit_code(run.findings, fail_on.value, run.unjudged))


@app.command()
def keygen(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the key files (must not hold them yet).")],
    passphrase_env: Annotated[str, typer.Option("--passphrase-env", help="Environment variable holding the "
                                                "passphrase; prompted for when it is not set.")] = "AUDITOR_KEY_PASS",
    name: Annotated[str, typer.Option(help="Common name of the signer in the certificate.")] =
    "auditor report signer",
    organisation: Annotated[str | None, typer.Option(help="Organisation in the certificate.")] = None,
    pkcs11_module: Annotated[Path | None, typer.Option("--pkcs11-module", help="Make the key on a PKCS#11 token "
                                                       "instead (an HSM, a smart card, SoftHSM2): its library.",
                                                       show_default=False)] = None,
    token: Annotated[str | None, typer.Option("--token", help="The token's label (with --pkcs11-module).",
                                              show_default=False)] = None,
    key_label: Annotated[str, typer.Option("--key-label", help="The key's label on the token.")] = "report-signer",
    pin_env: Annotated[str, typer.Option("--pin-env", help="Environment variable holding the token's user PIN.")] =
    "AUDITOR_PKCS11_PIN",
    csr: Annotated[bool, typer.Option("--csr", help="On a token: write a certificate signing request for a CA "
                                      "instead of a self-signed certificate.")] = False,
    import_certificate: Annotated[Path | None, typer.Option("--import-certificate", help="On a token: store the "
                                                            "certificate a CA issued for the key.",
                                                            show_default=False)] = None,
    days: Annotated[int, typer.Option(help="Validity of a self-signed certificate, in days.", min=1)] = 5 * 365,
) -> None:
    """Make a signing identity: RSA-3072 key + self-signed certificate (PKCS#12) and an Ed25519 bundle key; or, with
    --pkcs11-module, an RSA-3072 key made on a token (never leaving it) and its self-signed certificate stored there
    (or a CSR for a CA, whose certificate --import-certificate stores)."""
    import os

    from auditor.trust.keys import keygen as make_keys

    if pkcs11_module is not None:
        from auditor.trust.identity import TokenOptions
        from auditor.trust.token import token_keygen

        if not token:
            typer.echo("error: --pkcs11-module needs --token LABEL (the token's label)", err=True)
            raise typer.Exit(2)
        options = TokenOptions(module=pkcs11_module, token=token, key_label=key_label)
        made = _guard(lambda: token_keygen(options, pin_env, name=name, organisation=organisation, days=days,
                                           out_dir=out, csr=csr, import_certificate=import_certificate))
        for kind, path in made.items():
            typer.echo(f"{kind}: {path}")
        typer.echo(f"key: {key_label!r} on the token {token!r} (generated there; it never leaves it)")
        return
    passphrase = os.environ.get(passphrase_env)
    if passphrase is None:
        passphrase = typer.prompt(f"Passphrase ({passphrase_env} is not set)", hide_input=True,
                                  confirmation_prompt=True, err=True)
    paths = _guard(lambda: make_keys(out, passphrase, name=name, organisation=organisation, days=days))
    typer.echo(f"signing key (PKCS#12): {paths['p12']}\ncertificate (give to verifiers, --trust): {paths['cert']}\n"
               f"bundle key (Ed25519, private): {paths['bundle']}\nbundle public key (--pubkey): "
               f"{paths['bundle_pub']}")


@app.command()
def verify(
    run_dir: Annotated[Path, typer.Argument(help="A signed run folder (holds bundle.dsse.json).",
                                            show_default=False)],
    trust: Annotated[list[Path] | None, typer.Option(help="Certificates (PEM/DER, or a folder of them) trusted "
                                                           "to sign report.pdf and to timestamp it "
                                                           "(repeatable).")] = None,
    pubkey: Annotated[Path | None, typer.Option(help="Public key (PEM) trusted to sign the bundle.")] = None,
    approver_trust: Annotated[list[Path] | None, typer.Option("--approver-trust", help="Certificate (PEM/DER) of "
                                                              "an approver whose sign-off is trusted "
                                                              "(repeatable).")] = None,
    inputs: Annotated[bool, typer.Option("--inputs", help="Also re-hash every input the bundle names (model, "
                                         "data, packs, templates); one not found fails.")] = False,
    inputs_root: Annotated[Path | None, typer.Option("--inputs-root", help="Look for the inputs in this folder "
                                                     "too (by their recorded relative paths, then by name).",
                                                     show_default=False)] = None,
    at: Annotated[str | None, typer.Option("--at", help="Validate as of this time (ISO 8601, e.g. "
                                           "2031-01-01T00:00:00Z) instead of now.", show_default=False)] = None,
    require_revocation: Annotated[bool, typer.Option("--require-revocation", help="Fail when a certificate's "
                                                     "revocation cannot be checked (it names no OCSP responder or "
                                                     "CRL, or the signature embeds no revocation data).")] = False,
    roles: RolesOption = None, roles_trust: RolesTrustOption = None,
    debug: Debug = False,
) -> None:
    """Check a signed run: bundle signature, every file's sha256, unlisted files, the PDF signature and its
    trusted time, the approver's sign-off; with --inputs, the inputs too.

    Exit 0 when everything holds, 1 when anything does not, 2 on bad input."""
    from auditor.trust.verify import parse_moment, verify_run

    verdicts = _guard(lambda: verify_run(run_dir, trust=trust, pubkey=pubkey, approver_trust=approver_trust,
                                         inputs=inputs or inputs_root is not None, inputs_root=inputs_root,
                                         at=parse_moment(at), require_revocation=require_revocation,
                                         roles=_roles(roles, roles_trust)), debug=debug)
    for verdict in verdicts:
        typer.echo(verdict.line())
    failed = [v for v in verdicts if not v.ok]
    if failed:
        typer.echo(f"verdict: NOT VERIFIED ({len(failed)} problem{'s' if len(failed) > 1 else ''})")
        raise typer.Exit(1)
    typer.echo("verdict: VERIFIED")


@app.command()
def render(
    run_dir: Annotated[Path, typer.Argument(help="A run folder `auditor report` wrote.", show_default=False)],
    out: Annotated[Path | None, typer.Option(help="Folder to write the rendered report's folder in (default: "
                                                  "beside the run).", show_default=False)] = None,
    template: Annotated[Path | None, typer.Option(help="An organisation's templates folder (as output.templates): "
                                                       "render the evidence through it.", show_default=False)] = None,
    format_: Annotated[list[str] | None, typer.Option("--format", help="html and/or pdf (repeatable; default "
                                                      "html).", show_default=False)] = None,
    pubkey: Annotated[Path | None, typer.Option(help="Public key (PEM) trusted to sign the run's bundle: checked "
                                                     "before rendering.", show_default=False)] = None,
    document: Annotated[list[str] | None, typer.Option("--document", help="The documents to render (repeatable; "
                                                    "default report): report, ll144-summary, dsa-audit.",
                                                    show_default=False)] = None,
    debug: Debug = False,
) -> None:
    """Render a run's report again from its evidence.json alone, without running anything: into a new, unsigned
    folder outside the run. A signed run's evidence is first compared with the digest its bundle lists.

    Exit 0 when the report is written, 2 on bad input."""
    from auditor.commands.render_run import FORMATS, render_run

    formats = tuple(dict.fromkeys(format_ or ["html"]))
    wrong = [f for f in formats if f not in FORMATS]
    if wrong:
        typer.echo(f"error: --format {terminal(wrong[0])}: not a format; use html or pdf", err=True)
        raise typer.Exit(2)
    rendered = _guard(lambda: render_run(run_dir, out=out, templates=template, formats=formats, pubkey=pubkey,
                                         documents=tuple(dict.fromkeys(document or ["report"]))), debug=debug)
    for note in rendered.notes:
        typer.echo(f"note: {terminal(note)}", err=True)
    typer.echo(str(rendered.folder))


@app.command()
def restamp(
    runs: Annotated[list[Path], typer.Argument(help="Signed run folders (with --due: a run folder or the folder of "
                                               "run folders).", show_default=False)],
    timestamp_url: Annotated[str | None, typer.Option("--timestamp-url", help="The RFC 3161 TSA to ask (default: "
                                                      "$AUDITOR_TSA_URL).", show_default=False)] = None,
    trust: Annotated[list[Path] | None, typer.Option(help="Certificates (PEM/DER, or a folder of them) trusted for "
                                                           "the TSAs, the new one and the earlier ones (repeatable; "
                                                           "default: $AUDITOR_TSA_ROOTS).")] = None,
    due: Annotated[str | None, typer.Option("--due", help="Only list the runs whose proof ends within this span "
                                            "(90d, 6w, 18m, 2y); exit 1 when any does.", show_default=False)] = None,
    debug: Debug = False,
) -> None:
    """Renew a signed run's trusted time before its TSA's certificate expires: a new document timestamp with the
    previous one's validation data in report.pdf, and a renewal of the bundle's timestamp (docs/signing.md).
    Exit 0 when done, 2 on bad input; with --due, 1 when a run is due."""
    from auditor.trust import restamp as renewal
    from auditor.trust.certificates import load_trust
    from auditor.trust.timestamps import chosen_url, default_roots, describe_utc

    if due is not None:
        span = _guard(lambda: parse_span(due, "--due"), debug=debug)
        now = dt.datetime.now(dt.UTC)
        found = _guard(lambda: [p for folder in runs for p in renewal.signed_runs(folder)], debug=debug)
        late = 0
        for run in found:
            proof = renewal.proof_of(run)
            if proof.until is None:
                state, late = "DUE", late + 1
                typer.echo(f"{state:<4} {terminal(str(run))}: {terminal(proof.what)}")
                continue
            days = (proof.until - now).days
            state = "DUE" if proof.until <= now + span else "ok"
            late += state == "DUE"
            ended = "ended" if proof.until <= now else "holds until"
            typer.echo(f"{state:<4} {terminal(str(run))}: {ended} {describe_utc(proof.until)} ({days:,} days; "
                       f"{terminal(proof.what)})")
        typer.echo(f"due: {late} of {counted(len(found), 'signed run')} within {due}")
        raise typer.Exit(1 if late else 0)
    url = _guard(lambda: chosen_url(timestamp_url), debug=debug)  # http(s) only
    if not url:
        typer.echo("error: no TSA: give --timestamp-url URL (or set AUDITOR_TSA_URL)", err=True)
        raise typer.Exit(2)
    roots = _guard(lambda: load_trust(list(trust) if trust else default_roots()), debug=debug)
    for run in runs:
        done = _guard(functools.partial(renewal.restamp_run, run, url=url, trusted=roots), debug=debug)
        typer.echo(f"restamped: {terminal(str(done.run))}")
        for line in done.lines:
            typer.echo(f"  {terminal(line)}")


@app.command()
def approve(
    run_dir: Annotated[Path, typer.Argument(help="A signed run folder (holds bundle.dsse.json).",
                                            show_default=False)],
    as_: Annotated[str, typer.Option("--as", help='Who approves, and in which role: "Jane Roe, Head of Model '
                                     'Risk".', show_default=False)],
    pubkey: Annotated[Path, typer.Option("--pubkey", help="The tool's public key that signed the bundle, as for "
                                         "`verify`: only a run that verifies is approved.", show_default=False)],
    trust: Annotated[list[Path] | None, typer.Option(help="Certificates trusted for report.pdf's signer and the "
                                                           "TSAs, as for `verify` (repeatable).")] = None,
    key: Annotated[Path | None, typer.Option("--key", help="The approver's own PKCS#12 key and certificate (not the "
                                             "tool's signing key).", show_default=False)] = None,
    pkcs11_module: Annotated[Path | None, typer.Option("--pkcs11-module", help="Or the approver's key on a PKCS#11 "
                                                       "token: the token's library.", show_default=False)] = None,
    token: Annotated[str | None, typer.Option("--token", help="The token's label (with --pkcs11-module).",
                                              show_default=False)] = None,
    key_label: Annotated[str | None, typer.Option("--key-label", help="The key's label on the token.",
                                                  show_default=False)] = None,
    pin_env: Annotated[str, typer.Option("--pin-env", help="Environment variable holding the token's PIN.")] =
    "AUDITOR_PKCS11_PIN",
    timestamp_url: Annotated[str | None, typer.Option("--timestamp-url", help="An RFC 3161 TSA to date the approval "
                                                      "(default: $AUDITOR_TSA_URL; without one its time is the "
                                                      "approver's claim).", show_default=False)] = None,
    reject: Annotated[bool, typer.Option("--reject", help="Record a rejection (needs --reason).")] = False,
    reason: Annotated[str | None, typer.Option("--reason", help="Why (required with --reject).")] = None,
    register: Annotated[str | None, typer.Option("--register", help="The register: an SQLite file, a "
                                                 "postgresql:// URL, or `off` (default: the one the run was recorded "
                                                 "in, else $AUDITOR_REGISTER, else register.sqlite beside the run "
                                                 "folder).")] = None,
    passphrase_env: Annotated[str, typer.Option("--passphrase-env", help="Environment variable holding the key's "
                                                "passphrase; prompted for when it is not set.")] = "AUDITOR_KEY_PASS",
    roles: RolesOption = None, roles_trust: RolesTrustOption = None,
    debug: Debug = False,
) -> None:
    """Sign off a signed run that verifies (four eyes): a signed statement over its bundle, written as
    approval.dsse.json in the run folder and recorded in the register. Exit 0 when recorded, 2 on bad input or a
    run that does not verify."""
    from auditor.register import decisions
    from auditor.trust import approval, identity
    from auditor.trust.certificates import load_trust
    from auditor.trust.timestamps import chosen_url, default_roots
    from auditor.trust.verify import verify_run

    if reject and not (reason or "").strip():
        typer.echo('error: --reject needs --reason "why the run is rejected"', err=True)
        raise typer.Exit(2)
    if (key is None) == (pkcs11_module is None) or (pkcs11_module is not None and not (token and key_label)):
        typer.echo("error: give the approver's key: --key FILE.p12, or --pkcs11-module LIB --token LABEL --key-label "
                   "LABEL", err=True)
        raise typer.Exit(2)
    run = _guard(lambda: approval.inspect_run(run_dir), debug=debug)  # before the passphrase: nothing to ask
    chosen_roles = _guard(lambda: _roles(roles, roles_trust), debug=debug)
    verdicts = _guard(lambda: verify_run(run_dir, trust=trust, pubkey=pubkey), debug=debug)
    failed = [v for v in verdicts if not v.ok]
    if failed:
        typer.echo(f"error: {terminal(str(run_dir))}: the run does not verify ({len(failed)} problem"
                   f"{'s' if len(failed) > 1 else ''}, the first: {failed[0].line()}); only a run that `auditor "
                   "verify` calls VERIFIED can be approved", err=True)
        raise typer.Exit(2)
    recorded_in = (run.predicate.get("register") or {}).get("location") \
        if isinstance(run.predicate.get("register"), dict) else None
    store, note = _guard(lambda: decisions.open_for_run(run_dir, register, recorded_in), debug=debug)
    url = _guard(lambda: chosen_url(timestamp_url), debug=debug)  # http(s) only
    tsa_roots = _guard(lambda: load_trust([*(trust or []), *default_roots()]), debug=debug) if url else []
    with contextlib.ExitStack() as stack:
        if store is not None:
            stack.callback(store.close)
        if key is not None:
            passphrase = os.environ.get(passphrase_env)
            if passphrase is None:
                passphrase = typer.prompt(f"Passphrase of {key.name} ({passphrase_env} is not set)", hide_input=True,
                                          err=True)
            signer = _guard(lambda: identity.load_pkcs12_identity(key, passphrase, passphrase_env=passphrase_env),
                            debug=debug)
        else:
            assert pkcs11_module is not None and token is not None and key_label is not None
            options = identity.TokenOptions(module=pkcs11_module, token=token, key_label=key_label)
            signer = _guard(lambda: identity.open_token_identity(options, pin_env), debug=debug)
        stack.callback(signer.close)
        written = _guard(lambda: approval.write_approval(run, signer, name=as_, reason=reason,
                                                         decision="rejected" if reject else "approved",
                                                         timestamp_url=url, tsa_roots=tsa_roots, roles=chosen_roles),
                         debug=debug)
        typer.echo(f"{written.predicate['decision']}: {terminal(str(run_dir))} by "
                   f"{terminal(written.predicate['approver'])} (certificate {terminal(signer.subject)})", err=True)
        typer.echo(str(written.path))
        typer.echo(f"note: {terminal(written.in_pdf)}", err=True)
        if store is not None:
            note = _guard(lambda: decisions.record_approval(store, run_dir, written, run.bundle_sha256), debug=debug)
        typer.echo(f"note: {terminal(note)}", err=True)


@app.command()
def validate(spec: SpecArg, quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the check, no cost "
                                                                   "estimate.")] = False,
             debug: Debug = False) -> None:
    """Check a spec, its policies, model and data, without running any evidence; estimate what the audit will
    cost on this machine (per evidence item and in total)."""
    from auditor.run.engine import prepare

    prepared = _guard(lambda: prepare(spec), debug=debug)
    data = prepared.data
    typer.echo(f"ok: {spec} — {counted(len(prepared.spec.evidence), 'evidence item')}, "
               f"{counted(sum(len(p.pack.rules) for p in prepared.packs), 'rule')}; model {prepared.model.kind} with "
               f"{prepared.model.n_features or data.n_features} features; {data.n_docs} documents in "
               f"{data.n_queries} queries")
    if not quiet:
        from auditor.evidence.executor import usable_jobs
        from auditor.run.cost import plan_audit, plan_lines
        from auditor.run.engine import budget_choice

        jobs = usable_jobs(prepared.spec.executor.jobs, prepared.spec.executor.address)
        choice = _guard(lambda: budget_choice(prepared), debug=debug)
        items = choice.items if choice is not None else None
        for line in plan_lines(_guard(lambda: plan_audit(prepared, items, workers=jobs), debug=debug)):
            typer.echo(line)
        if choice is not None:
            typer.echo(f"budget: {choice.minutes:g} minutes, planned at the model's reference speed of "
                       f"{choice.reference_rows_per_second:,.0f} rows/s (estimate {choice.estimated_seconds / 60:.1f} "
                       f"min; as written {choice.full_seconds / 60:.1f} min)")
            for sentence in choice.sentences:
                typer.echo(f"budget: {sentence}")
            if not choice.fits:
                typer.echo(f"budget: NOT MET — raise `budget.minutes` above {choice.estimated_seconds / 60:.1f} or set "
                           "smaller `queries` per evidence item")


@app.command()
def schema(out: Annotated[Path | None, typer.Option("--out", "-o", help="Write to this file.")] = None) -> None:
    """Print the JSON Schema of the audit spec (for editor completion)."""
    from auditor.inputs.spec import json_schema

    text = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    if out is None:
        typer.echo(text, nl=False)
    else:
        _guard(lambda: write_new(out, text))
        typer.echo(str(out))


@app.command()
def precompile(jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Processes at once (default: "
                                                         "one a core, at most two).")] = None) -> None:
    """Compile the kernels an audit uses, once after installing, so the first audit starts warm (`make install`
    runs it)."""
    from auditor.commands.precompile import precompile as compile_kernels

    seconds = _guard(lambda: compile_kernels(jobs))
    typer.echo(f"kernels compiled in {seconds:.1f} s")


class Language(StrEnum):
    en = "en"
    de = "de"


@app.command()
def disclose(
    spec: SpecArg,
    run: Annotated[Path | None, typer.Option("--run", help="The run folder to draft from (default: the latest run of "
                                             "the spec as it is now, in its output folder).", show_default=False)] =
    None,
    language: Annotated[Language, typer.Option("--language", "-l", help="The statement's language.")] = Language.en,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write to this file, .md or .html (never "
                                             "overwritten); default: Markdown on stdout.", show_default=False)] =
    None,
    debug: Debug = False,
) -> None:
    """Draft the plain-language statement of the main ranking parameters (P2B Art. 5, DSA Art. 27) from a run's
    evidence: each sentence with the metric behind it, each claim marked so the next review checks it
    (docs/disclose.md). Runs no audit. Exit 0 when drafted, 2 on bad input."""
    from auditor.disclosure.command import disclose as drafted
    from auditor.disclosure.render import format_of

    def action() -> Any:
        fmt = format_of(out.suffix) if out is not None else "md"
        result = drafted(spec, run=run, language=language.value, fmt=fmt)
        if out is not None:
            write_new(out, result.text)
        return result

    result = _guard(action, debug=debug)
    typer.echo(f"note: drafted from {terminal(str(result.run))}", err=True)
    for note in result.notes:
        typer.echo(f"note: {terminal(note)}", err=True)
    typer.echo(str(out) if out is not None else result.text, nl=out is not None)


@app.command()
def diff(
    run_a: Annotated[Path, typer.Argument(help="The earlier run folder.", show_default=False)],
    run_b: Annotated[Path, typer.Argument(help="The later run folder.", show_default=False)],
    html: Annotated[Path | None, typer.Option("--html", help="Also write the comparison as HTML here.")] = None,
    debug: Debug = False,
) -> None:
    """Compare two audits: findings that changed status, metrics outside their interval, main parameters that
    entered or left, feature drift (PSI)."""
    from auditor.run.diff import compare, load_run, render_html, text_table

    def action() -> dict[str, Any]:
        result = compare(load_run(run_a), load_run(run_b), old_name=run_a.name, new_name=run_b.name, file=run_b)
        if html is not None:
            write_new(html, render_html(result))
        return result

    typer.echo("".join(terminal(line) + "\n" for line in text_table(_guard(action, debug=debug)).splitlines()),
               nl=False)


@policies_app.command("list")
def policies_list() -> None:
    """The built-in policy packs."""
    from auditor.judging.policy import builtin_pack_names, load_pack

    for name in builtin_pack_names():
        pack = _guard(functools.partial(load_pack, name, base_dir=Path.cwd())).pack
        typer.echo(terminal(f"{pack.pack:<20} {len(pack.rules):>3} rules  {pack.title}"))


@policies_app.command("show")
def policies_show(name: Annotated[str, typer.Argument(help="Built-in pack name or path to a pack file.")]) -> None:
    """The rules of one pack (with those it extends) as a table: id, severity, evidence, metric, requirement,
    citation."""
    from rich.console import Console
    from rich.table import Table

    from auditor.judging.policy import load_packs

    packs = _guard(lambda: load_packs([name], base_dir=Path.cwd()))
    pack = packs[-1].pack
    console = Console(width=max(Console().width, 160), highlight=False, soft_wrap=False)
    console.print(terminal(f"{pack.title} (pack {pack.pack}, version {pack.version})"), markup=False)
    if pack.description:
        console.print(terminal(pack.description.strip(), lines=True), markup=False)
    if len(packs) > 1:
        console.print("extends: " + ", ".join(p.pack.pack for p in packs[:-1]), markup=False)
    console.print("evidence needed: " + ", ".join(packs[-1].evidence()), markup=False)
    table = Table(show_lines=False, header_style="bold")
    for column in ("id", "pack", "severity", "evidence", "metric", "requirement", "citation"):
        table.add_column(column, overflow="fold", no_wrap=column in ("id", "metric"))
    for loaded in packs:
        for rule in loaded.pack.rules:
            table.add_row(*(terminal(cell) for cell in (rule.id, loaded.pack.pack, rule.severity, rule.evidence,
                                                        rule.metric or "—", rule.requirement(), rule.citation)))
    console.print(table)


@app.command()
def init(
    model: Annotated[Path, typer.Option(help="Model file (LightGBM .txt/.json, scikit-learn .skops).")],
    dataset: Annotated[Path, typer.Option(help="Dataset file (SVMlight/LETOR, CSV, Parquet).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the spec.")] = Path("audit.yaml"),
    policy: Annotated[list[str] | None, typer.Option(help="Policy pack to apply (repeatable).")] = None,
    title: Annotated[str, typer.Option(help="Report title.")] = "Audit of the ranking model",
    organisation: Annotated[str, typer.Option(help="Organisation name.")] = "Example Org",
) -> None:
    """Write a commented starter spec for a model and a dataset (never overwrites a file)."""
    from auditor.commands.starter import starter_spec

    text = _guard(lambda: starter_spec(model=model, dataset=dataset, spec_path=out, policies=policy or ["starter"],
                                       title=title, organisation=organisation))
    _guard(lambda: write_new(out, text))
    typer.echo(str(out))


@app.command("train-ilmart")
def train_ilmart(
    spec: SpecArg,
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the LightGBM model file (never "
                                      "overwritten).")],
    interactions: Annotated[int, typer.Option(help="Most feature pairs the model may use.", min=0)] = 10,
    max_features: Annotated[int | None, typer.Option("--max-features", help="Most distinct features for main "
                                                     "effects.", min=1)] = None,
    learning_rate: Annotated[float, typer.Option("--learning-rate", help="LightGBM learning rate.", min=1e-6,
                                                 max=1.0)] = 0.1,
    leaves: Annotated[int, typer.Option(help="Leaves per tree.", min=2)] = 15,
    validation_share: Annotated[float, typer.Option("--validation-share", help="Share of training queries held "
                                                    "out for early stopping.", min=0.01, max=0.9)] = 0.2,
    debug: Debug = False,
) -> None:
    """Train an interpretable ILMART ranker (paper 002) on the spec's background data and labels; audit it with a
    spec whose `model.path` is the written file."""
    from auditor.run.engine import train_ilmart
    from auditor.surrogate.ilmart import IlmartConfig

    config = IlmartConfig(n_interactions=interactions, max_features=max_features, learning_rate=learning_rate,
                          num_leaves=leaves)
    fit, ndcg = _guard(lambda: train_ilmart(spec, out, config=config, validation_share=validation_share),
                       debug=debug)
    typer.echo(f"{out}: {len(fit.main_features)} main-effect features, {len(fit.pairs)} pairs, "
               f"{fit.main_trees}+{fit.interaction_trees} trees"
               + "".join(f"; {k} nDCG@10 on the dataset {v:.4f}" for k, v in ndcg.items()))


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"auditor {__version__}")
        raise typer.Exit(0)


@app.callback()
def main(version: Annotated[bool, typer.Option("--version", callback=_version_callback, is_eager=True,
                                               help="Show the version and exit.")] = False) -> None:
    """Audit learning-to-rank models and write the evidence regulators ask for."""
    # Library warnings (scipy's ConstantInputWarning, numba's, ...) are not the user's to act on; whatever the audit
    # detects reaches the report instead. Worker processes inherit the setting through the environment.
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    warnings.simplefilter("ignore")


# --- governance: the register and its findings ----------------------------------------------------------------------

REGISTER_ENV = "AUDITOR_REGISTER"
RegisterOption = Annotated[str | None, typer.Option(
    "--register", help=f"The register: an SQLite file or a postgresql:// URL (default: ${REGISTER_ENV}, else "
                       "reports/register.sqlite).")]
AsOption = Annotated[str | None, typer.Option("--as", help="Who records this (default: $USER).")]


class FindingStatus(StrEnum):
    open = "open"
    responded = "responded"
    accepted = "accepted"
    overdue = "overdue"
    remediated = "remediated"
    merged = "merged"


def _open_register(register: str | None) -> Any:
    from auditor.register.store import Register

    return Register(register or os.environ.get(REGISTER_ENV) or "reports/register.sqlite", create=False)


def _day(text: str, option: str) -> str:
    from auditor.core.yaml_io import day_problem

    problem = day_problem(text)
    if problem is not None:
        raise InputError(f"{text[:40]} is not a day that exists ({problem})", where=option,
                         fix="write the day as YYYY-MM-DD")
    return text


class ListFormat(StrEnum):
    text = "text"
    json = "json"
    csv = "csv"


class DueFormat(StrEnum):
    text = "text"
    json = "json"


def _trails(store: Any, system: str | None) -> dict[str, str]:
    """Each system's trail: "intact", or "broken: <where>" (what a list never presents as genuine)."""
    return {r.system: "intact" if r.ok else f"broken: {r.breaks[0]}" for r in store.check(system=system,
                                                                                         folders=False)}


@findings_app.command("list")
def findings_list(system: Annotated[str | None, typer.Option(help="Only this system (spec `model.name`).")] = None,
                  status: Annotated[FindingStatus | None, typer.Option(help="Only findings in this status.")] = None,
                  format_: Annotated[ListFormat, typer.Option("--format", help="text (a table), json or csv: "
                                                              "everything a finding's card shows, the rules and "
                                                              "laws that judge it, and its history.")]
                  = ListFormat.text,
                  register: RegisterOption = None, debug: Debug = False) -> None:
    """Every finding of the register with its status today, first day seen, owner, due date and last response."""
    from auditor.register import export

    today = dt.date.today()

    def action() -> tuple[list[dict[str, Any]], dict[str, str], dict[str, Any], str]:
        store = _open_register(register)
        try:
            rows = [r for r in store.findings(system=system, today=today)
                    if status is None or r["state"].status == status.value]
            trails = _trails(store, system)
            latest = {name: (store.previous(name) or {}).get("document") for name in {r["system"] for r in rows}} \
                if format_ != ListFormat.text else {}
            return rows, trails, latest, store.shown
        finally:
            store.close()

    rows, trails, latest, shown_as = _guard(action, debug=debug)
    if format_ != ListFormat.text:
        for name, trail in trails.items():  # said where a person sees it too, not only in a column
            if trail != "intact":
                typer.echo(terminal(f"BROKEN TRAIL {name}: {trail.removeprefix('broken: ')}"), err=True)
        found = export.records(rows, latest, trails)
        typer.echo(export.to_json(found, register=shown_as, today=today) if format_ == ListFormat.json
                   else export.to_csv(found), nl=False)
        return
    _print_broken(trails)
    if not rows:
        typer.echo("no findings" + (f" of {terminal(system)}" if system else "") +
                   (f" in status {status.value}" if status else ""))
        return
    typer.echo(f"{'finding':<48} {'status':<11} {'severity':<9} {'first seen':<11} {'owner':<24} due")
    for r in rows:
        now = r["state"]
        typer.echo(terminal(f"{r['id']:<48} {now.status:<11} {r['severity']:<9} {now.first_seen:<11} "
                            f"{(now.owner or '—'):<24} {now.due or '—'}"))


@findings_app.command("due")
def findings_due(
    within: Annotated[str, typer.Option("--within", help="How far ahead to look: 14d, 6w, 3m (days, weeks, "
                                        "30-day months).")] = "14d",
    system: Annotated[str | None, typer.Option(help="Only this system (spec `model.name`).")] = None,
    format_: Annotated[DueFormat, typer.Option("--format", help="text (by owner) or json.")] = DueFormat.text,
    register: RegisterOption = None, debug: Debug = False,
) -> None:
    """What is due or overdue — remedies past or near their due date, risk acceptances that lapse or lapsed — by
    owner, for cron, CI or a chat webhook. Exit 0 when nothing is, 1 when something is, 2 on bad input."""
    from auditor.register import export

    span = _guard(lambda: parse_span(within, "--within"), debug=debug)
    today = dt.date.today()

    def action() -> tuple[list[dict[str, Any]], dict[str, str]]:
        store = _open_register(register)
        try:
            return export.due(store.findings(system=system, today=today), today, span), _trails(store, system)
        finally:
            store.close()

    items, trails = _guard(action, debug=debug)
    if format_ == DueFormat.json:
        typer.echo(json.dumps({"schema": "auditor.due/v1", "today": today.isoformat(), "within_days": span.days,
                               "trails": trails, "due": items}, indent=2, ensure_ascii=False))
    else:
        _print_broken(trails)
        if not items:
            typer.echo(f"nothing due within {counted(span.days, 'day')} (today {today.isoformat()})")
        owners: dict[str, list[dict[str, Any]]] = {}
        for item in items:
            owners.setdefault(item["owner"], []).append(item)
        for owner, mine in sorted(owners.items(), key=lambda pair: pair[1][0]["date"]):
            typer.echo(terminal(owner))
            for item in mine:
                typer.echo(terminal(f"  {item['id']:<46} {export.describe(item):<44} {item['severity']:<8} "
                                    f"{item['title']}"))
    raise typer.Exit(1 if items else 0)


def _print_broken(trails: dict[str, str]) -> None:
    for name, trail in sorted(trails.items()):
        if trail != "intact":
            typer.echo(terminal(f"BROKEN TRAIL {name}: {trail.removeprefix('broken: ')}; what follows includes "
                                "changes the register did not record (`auditor register check`)"))


@findings_app.command("show")
def findings_show(finding: Annotated[str, typer.Argument(help="The finding's id, e.g. catalogue-ranker/BASE-8.")],
                  register: RegisterOption = None, debug: Debug = False) -> None:
    """One finding and every event of its life."""
    row = _guard(lambda: _open_register(register).finding(finding, today=dt.date.today()), debug=debug)
    _trail_warnings(register, row["system"], debug)
    now = row["state"]
    typer.echo(terminal(f"{row['id']}: {row['title']} ({row['severity']}) — {now.status}, first seen "
                        f"{now.first_seen}"))
    for e in now.events:
        details = ", ".join(f"{k} {v}" for k, v in e.to_json().items()
                            if k not in ("event", "on_day", "actor", "signature"))
        signed = f" ({e.signature})" if e.signature else ""
        typer.echo(terminal(f"  {e.on_day}  {e.event:<10} by {e.actor}{signed}" + (f": {details}" if details else "")))


def _trail_warnings(register: str | None, system: str | None, debug: bool) -> None:
    """Before anything is shown from the register: where its trail breaks, if it does (never shown as genuine)."""
    def action() -> dict[str, str]:
        store = _open_register(register)
        try:
            return _trails(store, system)
        finally:
            store.close()

    _print_broken(_guard(action, debug=debug))


KeyOption = Annotated[Path | None, typer.Option("--key", help="Your own PKCS#12 key and certificate: the decision is "
                                               "signed by you, and you are its actor.", show_default=False)]
ModuleOption = Annotated[Path | None, typer.Option("--pkcs11-module", help="Or your key on a PKCS#11 token: the "
                                                   "token's library.", show_default=False)]
TokenOption = Annotated[str | None, typer.Option("--token", help="The token's label (with --pkcs11-module).",
                                                 show_default=False)]
KeyLabelOption = Annotated[str | None, typer.Option("--key-label", help="The key's label on the token.",
                                                    show_default=False)]
PinEnvOption = Annotated[str, typer.Option("--pin-env", help="Environment variable holding the token's PIN.")]
PassEnvOption = Annotated[str, typer.Option("--passphrase-env", help="Environment variable holding the key's "
                                            "passphrase; prompted for when it is not set.")]
RolesOption = Annotated[Path | None, typer.Option("--roles", help="The signed roles file (default: $AUDITOR_ROLES): "
                                                  "who may decide what.", show_default=False)]
RolesTrustOption = Annotated[list[Path] | None, typer.Option("--roles-trust", help="Certificates trusted to sign "
                                                             "the roles file (default: $AUDITOR_ROLES_TRUST).")]
ROLES_ENV, ROLES_TRUST_ENV, DECISIONS_ENV = "AUDITOR_ROLES", "AUDITOR_ROLES_TRUST", "AUDITOR_DECISIONS"


def _person(key: Path | None, module: Path | None, token: str | None, key_label: str | None, pin_env: str,
            passphrase_env: str, who: str) -> Any:
    """The identity of the person deciding (`trust.identity.Identity`), or None when no key was given."""
    from auditor.trust import identity

    if key is not None and module is not None:
        raise InputError("give one key: --key FILE.p12, or --pkcs11-module LIB --token LABEL --key-label LABEL",
                         fix="drop one of them")
    if key is not None:
        passphrase = os.environ.get(passphrase_env)
        if passphrase is None:
            passphrase = typer.prompt(f"Passphrase of {key.name} ({passphrase_env} is not set)", hide_input=True,
                                      err=True)
        return identity.load_pkcs12_identity(key, passphrase, passphrase_env=passphrase_env, who=who)
    if module is not None:
        if not token or not key_label:
            raise InputError("--pkcs11-module needs --token LABEL and --key-label LABEL", fix="name the key")
        return identity.open_token_identity(identity.TokenOptions(module=module, token=token, key_label=key_label),
                                            pin_env, who=who)
    return None


def _roles(path: Path | None, trust: list[Path] | None) -> Any:
    """The signed roles file (`--roles`, else $AUDITOR_ROLES), verified against `--roles-trust` (else
    $AUDITOR_ROLES_TRUST); None when none is configured."""
    from auditor.trust.certificates import load_trust
    from auditor.trust.roles import load_roles

    chosen = path or (Path(os.environ[ROLES_ENV]) if os.environ.get(ROLES_ENV) else None)
    if chosen is None:
        return None
    roots = list(trust) if trust else [Path(p) for p in os.environ.get(ROLES_TRUST_ENV, "").split(os.pathsep) if p]
    return load_roles(chosen, load_trust(roots))


def _decisions_folder(store: Any, option: Path | None) -> Path:
    """Where decision files go: --decisions, else $AUDITOR_DECISIONS, else the register's setting (`auditor register
    settings --decisions`), else `decisions/` beside an SQLite register (the reports folder `register rebuild`
    reads); a server's register without the setting is an error."""
    if option is not None:
        return option
    if os.environ.get(DECISIONS_ENV):
        return Path(os.environ[DECISIONS_ENV])
    if store.setting("decisions_folder"):
        return Path(str(store.setting("decisions_folder")))
    if store.sqlite:
        return Path(store.location).parent / "decisions"
    raise InputError("where do signed decisions go? A server's register has no folder of its own",
                     fix="set one once: `auditor register settings --decisions DIR` (or give --decisions, or "
                     "$AUDITOR_DECISIONS)")


DECISION_CHARS = {"owner": 200, "approver": 200, "response": 2_000, "reason": 2_000}  # what a card can show


@dataclass
class _Decider:
    """Who decides on a finding, and where the decision goes: the options `findings respond` and `findings accept`
    share."""

    key: Path | None
    module: Path | None
    token: str | None
    key_label: str | None
    pin_env: str
    passphrase_env: str
    roles: Path | None
    roles_trust: list[Path] | None
    decisions: Path | None
    timestamp_url: str | None
    strict: bool
    as_: str | None
    register: str | None


def _decide(finding: str, kind: str, role: str, who: _Decider, days: dict[str, tuple[str, str]],
            **fields: str) -> tuple[str, list[str]]:
    """Append one decision to a finding's history: signed by the person's own key (a statement in the register and
    a file in the decisions folder; the actor is the certificate's subject), or unsigned where the register allows
    it. With a roles file, the person must hold `role` under a certificate that chains to the roles' roots. A day
    already past is a warning (refused with --strict). Returns (the actor, the notes to print)."""
    from auditor.register.lifecycle import Event
    from auditor.register.review import actor
    from auditor.trust.certificates import load_trust
    from auditor.trust.decision import file_name, read_decision, sign_decision
    from auditor.trust.timestamps import chosen_url, default_roots

    checked = {name: _day(text, option) for name, (text, option) in days.items()}
    for name, value in fields.items():
        limit = DECISION_CHARS.get(name, DECISION_CHARS["reason"])
        if not value.strip():
            raise InputError(f"--{name} is empty", fix=f"say it in words: --{name} \"…\"")
        if len(value) > limit:
            raise InputError(f"--{name} is {len(value):,} characters long (at most {limit:,})",
                             fix="shorten it; put the details in the remediation plan it names")
    notes, today = [], dt.date.today()
    for name, value in checked.items():
        if dt.date.fromisoformat(value) < today:
            what = "the due date is already past" if name == "due" else "the acceptance has lapsed already"
            if who.strict:
                raise InputError(f"{what} ({value})", where=f"--{name}", fix="give a day after today (or drop "
                                 "--strict to record it all the same)")
            notes.append(f"warning: {what} ({value}): recorded all the same")
    roles = _roles(who.roles, who.roles_trust)
    store = _open_register(who.register)
    try:
        row = store.finding(finding, today=today)
        if who.key is None and who.module is None:
            if store.setting("unsigned_decisions") != "allowed":
                raise InputError("a decision is signed by the person who makes it", fix="give your key: --key "
                                 "FILE.p12 (or --pkcs11-module, --token, --key-label); unsigned decisions only where "
                                 "the register allows them: `auditor register settings --unsigned-decisions "
                                 "allowed`")
            if kind == "accepted" and not fields.get("approver"):
                if not who.as_:
                    raise InputError("who accepts the risk?", fix="sign with your key (--key), or give --approver")
                fields = {**fields, "approver": who.as_}
            name = fields.get("approver") or who.as_ or actor()
            store.add_event(finding, Event(kind, today.isoformat(), who.as_ or actor(), **fields, **checked))
            notes.append("unsigned: recorded without a signature (the register allows it); it reads as unsigned "
                         "wherever it appears")
            return name, notes
        if who.as_ is not None or fields.get("approver"):
            raise InputError("a signed decision's actor is your certificate's subject", where="--as/--approver",
                             fix="drop --as and --approver (they name who decides only for unsigned decisions)")
        folder = _decisions_folder(store, who.decisions)
        runs = store.runs(row["system"])
        last_run = max(runs, key=lambda r: r["id"])["run_name"] if runs else None
        person = _person(who.key, who.module, who.token, who.key_label, who.pin_env, who.passphrase_env,
                         "the person deciding")
        try:
            if kind == "accepted":
                fields = {**fields, "approver": person.subject}
            _, head = store.head(row["system"])
            url = chosen_url(who.timestamp_url)  # http(s) only
            tsa_roots = load_trust(default_roots()) if url else []
            data = sign_decision(person, kind=kind, finding=finding, system=row["system"],
                                 fields={**fields, **checked}, head=head,
                                 register_id=store.setting("register_id") or "", after_run=last_run, timestamp_url=url,
                                 tsa_roots=tsa_roots)
        finally:
            person.close()
        decision = read_decision(data)
        refused = roles.refuses(decision.entry, role, claimed=decision.time, tsa_roots=tsa_roots) if roles else None
        if refused is not None:
            raise InputError(refused, where="--roles", fix=f"decide with the key of someone who has the role `{role}`"
                             " under a certificate that chains to --roles-trust")
        target = folder / file_name(decision, data)
        store.add_event(finding, Event(kind, decision.time.date().isoformat(), decision.actor, **fields, **checked),
                        statement=data.decode("utf-8"), signer=decision.actor)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_new(target, data.decode("utf-8"))
        except (InputError, OSError) as exc:
            problem = exc.problem if isinstance(exc, InputError) else str(exc)
            raise InputError(f"{problem} (the decision is in the register; its file was not written)", file=target,
                             fix="give --decisions a folder you may write to, and copy the statement there from "
                             "`auditor findings show`") from None
        notes.append(f"signed by {decision.actor}; kept as {target}")
        return decision.actor, notes
    finally:
        store.close()


DecisionsOption = Annotated[Path | None, typer.Option("--decisions", help="The decisions folder, where each signed "
                                                      "decision is also kept as a file (default: $AUDITOR_DECISIONS,"
                                                      " else decisions/ beside the register).", show_default=False)]
DecisionTsaOption = Annotated[str | None, typer.Option("--timestamp-url", help="A TSA to date the decision "
                                                       "(default: $AUDITOR_TSA_URL).", show_default=False)]


@findings_app.command("respond")
def findings_respond(
    finding: Annotated[str, typer.Argument(help="The finding's id, e.g. catalogue-ranker/BASE-8.")],
    owner: Annotated[str, typer.Option(help="Who owns the remedy (person or team).")],
    due: Annotated[str, typer.Option(help="When the remedy is due (YYYY-MM-DD).")],
    response: Annotated[str, typer.Option(help="The management response: what will be done.")],
    key: KeyOption = None, pkcs11_module: ModuleOption = None, token: TokenOption = None,
    key_label: KeyLabelOption = None, pin_env: PinEnvOption = "AUDITOR_PKCS11_PIN",
    passphrase_env: PassEnvOption = "AUDITOR_KEY_PASS", roles: RolesOption = None, roles_trust: RolesTrustOption = None,
    decisions: DecisionsOption = None, timestamp_url: DecisionTsaOption = None,
    strict: Annotated[bool, typer.Option("--strict", help="Refuse a due date already past.")] = False,
    as_: AsOption = None, register: RegisterOption = None, debug: Debug = False,
) -> None:
    """Record the management response to a finding: owner, due date and what will be done — signed with your key
    (you are its actor; the roles file's `owner` role when one is given), kept in the register and as a file in
    the decisions folder."""
    who = _Decider(key, pkcs11_module, token, key_label, pin_env, passphrase_env, roles, roles_trust, decisions,
                   timestamp_url, strict, as_, register)
    _, notes = _guard(lambda: _decide(finding, "responded", "owner", who, {"due": (due, "--due")}, owner=owner,
                                      response=response), debug=debug)
    typer.echo(terminal(f"{finding}: responded (owner {owner}, due {due})"))
    for note in notes:
        typer.echo(terminal(note if note.startswith("warning:") else f"note: {note}"), err=True)


@findings_app.command("accept")
def findings_accept(
    finding: Annotated[str, typer.Argument(help="The finding's id, e.g. catalogue-ranker/BASE-8.")],
    until: Annotated[str, typer.Option(help="Last day the acceptance holds (YYYY-MM-DD).")],
    reason: Annotated[str, typer.Option(help="Why the risk is accepted.")],
    approver: Annotated[str | None, typer.Option(help="Who accepts the risk, for an unsigned decision (signed, it is "
                                                 "your certificate's subject).")] = None,
    key: KeyOption = None, pkcs11_module: ModuleOption = None, token: TokenOption = None,
    key_label: KeyLabelOption = None, pin_env: PinEnvOption = "AUDITOR_PKCS11_PIN",
    passphrase_env: PassEnvOption = "AUDITOR_KEY_PASS", roles: RolesOption = None, roles_trust: RolesTrustOption = None,
    decisions: DecisionsOption = None, timestamp_url: DecisionTsaOption = None,
    strict: Annotated[bool, typer.Option("--strict", help="Refuse an acceptance that has lapsed already.")] = False,
    as_: AsOption = None, register: RegisterOption = None, debug: Debug = False,
) -> None:
    """Record a risk acceptance of a finding and the day it lapses — signed with your key (you accept the risk; the
    roles file's `risk_acceptor` role when one is given), kept in the register and as a file in the decisions
    folder."""
    who = _Decider(key, pkcs11_module, token, key_label, pin_env, passphrase_env, roles, roles_trust, decisions,
                   timestamp_url, strict, as_, register)
    fields = {"reason": reason, **({"approver": approver} if approver else {})}
    actor_, notes = _guard(lambda: _decide(finding, "accepted", "risk_acceptor", who, {"until": (until, "--until")},
                                           **fields), debug=debug)
    typer.echo(terminal(f"{finding}: accepted by {actor_} until {until}"))
    for note in notes:
        typer.echo(terminal(note if note.startswith("warning:") else f"note: {note}"), err=True)


@app.command("implementation-report")
def implementation_report(
    system: Annotated[str | None, typer.Option("--system", help="The system (model name) whose last DSA audit the "
                                               "report answers.", show_default=False)] = None,
    out: Annotated[Path, typer.Option("--out", help="Folder to write the report's folder in.")] = Path("reports"),
    format_: Annotated[list[str] | None, typer.Option("--format", help="html and/or pdf (repeatable; default "
                                                      "html).", show_default=False)] = None,
    check: Annotated[Path | None, typer.Option("--check", help="Verify an adopted report's folder instead: its "
                                               "adopter's signature and every file unchanged.",
                                               show_default=False)] = None,
    key: KeyOption = None, pkcs11_module: ModuleOption = None, token: TokenOption = None,
    key_label: KeyLabelOption = None, pin_env: PinEnvOption = "AUDITOR_PKCS11_PIN",
    passphrase_env: PassEnvOption = "AUDITOR_KEY_PASS", timestamp_url: DecisionTsaOption = None,
    register: RegisterOption = None, debug: Debug = False,
) -> None:
    """Draft the audit implementation report (DSA Art. 37(6); Annex II of Reg. 2024/436) of a system's last DSA
    audit from the register: each recommendation with the response, owner, measures and due date recorded, and
    whether a later review found it remediated. With --key (the provider's person's own key) it is adopted and
    signed as adoption.dsse.json; --check FOLDER verifies one.

    Exit 0 when written (or verified), 2 on bad input."""
    if check is not None:
        from auditor.commands.implementation import check as check_folder

        typer.echo(terminal(_guard(lambda: check_folder(check), debug=debug)))
        return
    if system is None:
        typer.echo("error: give --system (the system's name, as `auditor findings list` shows it), or --check "
                   "FOLDER", err=True)
        raise typer.Exit(2)
    formats = tuple(dict.fromkeys(format_ or ["html"]))
    wrong = [f for f in formats if f not in ("html", "pdf")]
    if wrong:
        typer.echo(f"error: --format {terminal(wrong[0])}: not a format; use html or pdf", err=True)
        raise typer.Exit(2)

    def action() -> Path:
        from auditor.commands.implementation import write_draft
        from auditor.trust.certificates import load_trust
        from auditor.trust.timestamps import chosen_url, default_roots

        store = _open_register(register)
        person = None
        try:
            person = _person(key, pkcs11_module, token, key_label, pin_env, passphrase_env, "the provider's person")
            url = chosen_url(timestamp_url) if person is not None else None
            return write_draft(store, system, out, formats=formats, today=dt.date.today(), identity=person,
                               timestamp_url=url, tsa_roots=load_trust(default_roots()) if url else [])
        finally:
            if person is not None:
                person.close()
            store.close()

    folder = _guard(action, debug=debug)
    if key is None and pkcs11_module is None:
        typer.echo("note: a draft, not adopted: the provider's person adopts it with their own key (--key)", err=True)
    typer.echo(str(folder))


@register_app.command("settings")
def register_settings(
    unsigned_decisions: Annotated[str | None, typer.Option("--unsigned-decisions", help="`allowed` or `refused` "
                                                           "(the default): may responses and acceptances be recorded "
                                                           "without the person's signature?", show_default=False)]
    = None,
    decisions: Annotated[Path | None, typer.Option("--decisions", help="The folder where signed decisions are kept "
                                                   "as files (default: decisions/ beside an SQLite register).",
                                                   show_default=False)] = None,
    register: RegisterOption = None, debug: Debug = False,
) -> None:
    """Show or change the register's settings."""
    def action() -> str:
        store = _open_register(register)
        try:
            if unsigned_decisions is not None:
                if unsigned_decisions not in ("allowed", "refused"):
                    raise InputError(f"--unsigned-decisions {unsigned_decisions[:20]!r}", fix="allowed or refused")
                store.set_setting("unsigned_decisions", unsigned_decisions)
            if decisions is not None:
                store.set_setting("decisions_folder", str(decisions.absolute()))
            folder = store.setting("decisions_folder") or (str(Path(store.location).parent / "decisions")
                                                           if store.sqlite else "not set")
            return (f"unsigned decisions: {store.setting('unsigned_decisions') or 'refused'}\n"
                    f"decisions folder:   {folder}")
        finally:
            store.close()

    typer.echo(_guard(action, debug=debug))


@register_app.command("rebuild")
def register_rebuild(
    folder: Annotated[Path, typer.Argument(help="The folder holding the run folders (e.g. reports).")],
    register: RegisterOption = None,
    decisions: Annotated[Path | None, typer.Option("--decisions", help="The decisions folder (default: "
                                                   "FOLDER/decisions).", show_default=False)] = None,
    trust: Annotated[list[Path] | None, typer.Option(help="As for `auditor verify`: certificates trusted for the "
                                                           "signer and the TSA (repeatable).")] = None,
    pubkey: Annotated[Path | None, typer.Option(help="As for `auditor verify`: the bundle's public key.",
                                                show_default=False)] = None,
    approver_trust: Annotated[list[Path] | None, typer.Option(help="As for `auditor verify`: certificates trusted "
                                                                    "for approvers (repeatable).")] = None,
    refuse_unverified: Annotated[bool, typer.Option("--refuse-unverified", help="Leave out every run folder that "
                                                    "does not verify (default: index it, marked unverified).")]
    = False,
    debug: Debug = False,
) -> None:
    """Index every run folder under FOLDER, every approval beside them and every signed decision in the decisions
    folder that the register lacks, in the order they happened. Each folder is verified as `auditor verify` would
    (--trust, --pubkey, --approver-trust): one that does not is indexed as unverified and never as approved (or left
    out with --refuse-unverified); a folder whose evidence.json is not what an audit writes, and a decision whose
    signature does not verify, are left out and named."""
    from auditor.register.rebuild import Trust, rebuild

    options = Trust(trust=trust, pubkey=pubkey, approver_trust=approver_trust, refuse_unverified=refuse_unverified)
    done = _guard(lambda: rebuild(folder, register or str(folder / "register.sqlite"), decisions, options),
                  debug=debug)
    typer.echo(f"{len(done.runs)} run(s) indexed" + "".join(f"\n  {terminal(p.name)}" for p in done.runs))
    for line in done.unverified:  # "<run>: unsigned" or "<run>: unverified: <why>"
        typer.echo(terminal(f"  indexed as not verified: {line}"))
    typer.echo(f"{done.decisions} signed decision(s) and {done.approvals} approval(s) restored")
    for line in done.left_out:
        typer.echo(terminal(f"left out: {line}"), err=True)


@register_app.command("check")
def register_check(
    system: Annotated[str | None, typer.Option(help="Only this system (spec `model.name`).")] = None,
    register: RegisterOption = None,
    trust: Annotated[list[Path] | None, typer.Option(help="Certificates trusted for the TSA of the anchors "
                                                           "(repeatable; default: $AUDITOR_TSA_ROOTS).")] = None,
    anchor: Annotated[bool, typer.Option("--anchor", help="Then have the TSA timestamp each intact trail's head "
                                         "(kept in the register, and with --anchor-out as files).")] = False,
    timestamp_url: Annotated[str | None, typer.Option("--timestamp-url", help="The TSA for --anchor (default: "
                                                      "$AUDITOR_TSA_URL).", show_default=False)] = None,
    anchor_out: Annotated[Path | None, typer.Option("--anchor-out", help="Also write each anchor as a file into "
                                                    "this folder, to keep apart from the database.",
                                                    show_default=False)] = None,
    debug: Debug = False,
) -> None:
    """Walk the register's trail (a hash chain per system over every run, event and approval) against the rows it
    stands for, the run folders' digests, the heads signed runs pinned and the anchors: one line per system, the
    first break named. Exit 0 when every trail holds, 1 when one breaks, 2 on bad input."""
    from auditor.trust import timestamps
    from auditor.trust.certificates import load_trust

    roots = _guard(lambda: load_trust(list(trust) if trust else timestamps.default_roots()), debug=debug)
    store = _guard(lambda: _open_register(register), debug=debug)
    try:
        results = _guard(lambda: store.check(system=system, tsa_roots=roots), debug=debug)
        if not results:
            typer.echo("no trail" + (f" of {terminal(system)}" if system else "") + " in the register")
        for result in results:
            name = terminal(result.system or "(approvals of runs the register lacks)")
            if result.ok:
                before = f" ({result.pre_chain} recorded before the trail)" if result.pre_chain else ""
                pins = ("; 1 signed run's pin holds" if result.pinned == 1 else
                        f"; {result.pinned:,} signed runs' pins hold" if result.pinned else "")
                anchors = ("; 1 anchor holds" if result.anchored == 1 else
                           f"; {result.anchored:,} anchors hold" if result.anchored else "")
                signed = f"; {counted(result.signed, 'signed decision', 'signed decisions')} verified" \
                    if result.signed else ""
                typer.echo(f"OK   {name}: {counted(result.length, 'entry', 'entries')}, intact{before}{pins}"
                           f"{anchors}{signed}; head {result.head[:16]}…")
            for problem in result.breaks:
                typer.echo(f"FAIL {name}: {terminal(problem)}")
            for note in result.notes:
                typer.echo(f"     note: {terminal(note)}")
        broken = [r for r in results if not r.ok]
        if anchor and not broken:
            url = _guard(lambda: timestamps.chosen_url(timestamp_url), debug=debug)
            if not url:
                typer.echo("error: --anchor needs a TSA: --timestamp-url URL (or AUDITOR_TSA_URL)", err=True)
                raise typer.Exit(2)
            for result in results:
                line = _guard(functools.partial(_anchor, store, result, url, roots, anchor_out), debug=debug)
                typer.echo(terminal(line))
        if broken:
            raise typer.Exit(1)
    finally:
        store.close()


def _anchor(store: Any, result: Any, url: str, roots: list[Any], out: Path | None) -> str:
    """Have the TSA timestamp one system's trail head; kept in the register (and in `out`)."""
    from auditor.register.trail import anchor_bytes, anchor_file
    from auditor.trust import timestamps

    data = anchor_bytes(result.system, result.length, result.head)
    try:
        token = timestamps.token_for(url, data)
    except timestamps.TimestampError as exc:
        raise timestamps.read_error(url, exc) from None
    facts = timestamps.check_token(token, data, roots)
    if not facts.intact or not facts.trusted:
        raise InputError(f"the TSA's token does not chain to a --trust certificate ({facts.tsa}); nothing anchored",
                         where="--trust", fix="name the TSA's root certificate (or AUDITOR_TSA_ROOTS)")
    store.add_anchor(result.system, result.length, result.head, token)
    if out is not None:
        from auditor.core.files import replace_file

        out.mkdir(parents=True, exist_ok=True)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in result.system)[:80] or "none"
        replace_file(out / f"{safe}-{result.length}.anchor.json",
                     anchor_file(result.system, result.length, result.head, token).encode("utf-8"),
                     fix="give --anchor-out a folder you may write to")
    return (f"anchored: {result.system or '(unrecorded runs)'} at entry {result.length}, "
            f"{timestamps.describe_utc(facts.time)} by {facts.tsa}")


@roles_app.command("sign")
def roles_sign(
    source: Annotated[Path, typer.Argument(help="The roles file (YAML: `roles:` mapping approver, risk_acceptor, "
                                           "owner and auditor to `subject:` or `issuer:` names).",
                                           show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="The signed roles file to write (never overwritten).")],
    key: KeyOption = None, pkcs11_module: ModuleOption = None, token: TokenOption = None,
    key_label: KeyLabelOption = None, pin_env: PinEnvOption = "AUDITOR_PKCS11_PIN",
    passphrase_env: PassEnvOption = "AUDITOR_KEY_PASS", debug: Debug = False,
) -> None:
    """Sign a roles file with a key whose certificate chains to the roots approvers, verifiers and the findings
    commands will trust for it (--roles-trust). Exit 0 when written, 2 on bad input."""
    from auditor.core.files import MAX_YAML_BYTES, read_bytes
    from auditor.core.yaml_io import parse_yaml
    from auditor.trust.roles import sign_roles

    def action() -> Path:
        data = read_bytes(source, limit=MAX_YAML_BYTES, what="roles file")
        try:
            mapping, _marks = parse_yaml(data.decode("utf-8"), source)
        except UnicodeDecodeError:
            raise InputError("the roles file is not UTF-8 text", file=source, fix="save it as UTF-8 YAML") from None
        person = _person(key, pkcs11_module, token, key_label, pin_env, passphrase_env, "the roles' signer")
        if person is None:
            raise InputError("a roles file is signed", fix="give the signer's key: --key FILE.p12 (or a token)")
        try:
            signed = sign_roles(mapping, data, person)
        finally:
            person.close()
        write_new(out, signed.decode("utf-8"))
        return out

    typer.echo(str(_guard(action, debug=debug)))


@roles_app.command("show")
def roles_show(roles: Annotated[Path, typer.Argument(help="A signed roles file.", show_default=False)],
               roles_trust: RolesTrustOption = None, debug: Debug = False) -> None:
    """Verify a signed roles file against --roles-trust and print who has which role."""
    loaded = _guard(lambda: _roles(roles, roles_trust), debug=debug)
    typer.echo(terminal(f"signed by {loaded.signed_by}"))
    for role, members in sorted(loaded.roles.items()):
        for member in members:
            kind, name = next(iter(member.items()))
            typer.echo(terminal(f"{role:<14} {kind:<8} {name}"))


@app.command()
def history(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the site (made if missing). The site's own "
                                      "pages there (index.html and <system>.html) are replaced; a file of those "
                                      "names that `auditor history` did not write is refused; other files are left "
                                      "alone.", show_default=False)],
    system: Annotated[str | None, typer.Option(help="Only this system (spec `model.name`).")] = None,
    template: Annotated[Path | None, typer.Option(help="An organisation's templates folder (as output.templates): "
                                                       "its history/index.html.j2 and history/system.html.j2 are "
                                                       "used before ours.", show_default=False)] = None,
    register: RegisterOption = None, debug: Debug = False,
) -> None:
    """Write the register's history as a static HTML site for the board: a portfolio page (index.html) and a page
    per system with its reviews, approvals, trends of the key numbers and every finding's events. No server, no
    script: open index.html from disk. Exit 0 when written, 2 on bad input."""
    from auditor.report.history import write_site

    def action() -> list[Path]:
        store = _open_register(register)
        try:
            return write_site(store, out, system=system, today=dt.date.today(), templates=template)
        finally:
            store.close()

    written = _guard(action, debug=debug)
    typer.echo(f"{len(written)} page(s) written", err=True)
    typer.echo(str(written[0]))
