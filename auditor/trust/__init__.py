"""Trust: the signatures and proofs of a run folder, and checking them (`auditor keygen`, signing in `auditor
report`, `auditor verify`, `auditor approve`).

One direction of imports, from the bottom up (tests/test_layers.py holds it, with no private name crossing modules):

- `layout`: the names of a signed run's files and of its statements' types;
- `verdict` (one printed check), `strict_json` (JSON read from a folder nobody vouches for), `certificates` (X.509
  files, public keys and key ids, pyHanko's quiet logging);
- `dsse`: DSSE envelopes — the PAE, signing and verifying a payload by key type, parsing an envelope;
- `net` (every HTTP exchange: http(s) only, one deadline for the whole exchange, a size cap; pyHanko's fetchers),
  `timestamps` (RFC 3161 client and tokens), `token` (a key on a PKCS#11 token);
- `keys`: `auditor keygen` and the signing material a spec names (`SigningMaterial`); `identity` (a person's key and
  the signature entry of their statements);
- `pdf_form` (report.pdf's approval form: the status on every page, the cover's approval field), `pdf_revisions`
  (what later revisions of a signed PDF may add), `pdf_sign` (PAdES), `pdf_approval` (the approver's decision signed
  inside report.pdf), `pdf_verify` (its validation, B-B and B-LTA), `pdf_attachment` (the evidence.json attached to
  report.pdf);
- `bundle` (bundle.dsse.json: written, its signature and its timestamp checked), `run_folder` (the folder's files
  against the statement's subjects);
- `roles` (who may decide what, signed under named roots), `decision` (a response or risk acceptance signed by its
  maker), `approval` (an approver's sign-off, written and checked), `restamp` (renewed trusted time);
- `sign` (`sign_run`) and `verify` (`verify_run`): the two entries the commands call.

Nothing here writes to the register: the commands do (`auditor.register.decisions`). Every file of a run folder is
read through `auditor.core.files.open_regular` (regular files only, never blocking)."""
