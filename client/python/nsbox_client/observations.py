"""Observed judge runs, judged again without running: ``nsbox judge
--observe`` and ``--replay`` from Python.

    from nsbox_client import judge, replay

    v = judge(spec, observe="obs.jsonl")     # runs every case, keeps what happened
    w = replay("obs.jsonl", new_spec)        # new expectations, nothing runs
    w.replayed                               # True

An observation is one line per case: what ran (program and policy hashes,
arguments, stdin, limits) and its result object, with an id. ``replay``
judges those results against the spec's expectations and never starts a
sandbox; when the spec's program, arguments, stdin or resolved policy (its
profile, limits and the client's ``extra_args``) differ from what was
observed, nsbox refuses and ``replay`` raises NsboxError naming the first
difference. Replay with the same Client (the same extra_args) as the run.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from .client import Client
from .errors import NsboxError
from .results import Verdict

SpecLike = Union[Dict[str, Any], str, "os.PathLike[str]"]
PathLike = Union[str, "os.PathLike[str]"]

OBSERVATION_SCHEMA = "nsbox.observation/1"

__all__ = ["Observation", "judge", "replay", "read_observations", "OBSERVATION_SCHEMA"]


@dataclass(frozen=True)
class Observation:
    """One case as it ran (a line of an --observe file)."""
    observation_id: str
    run_id: str
    case_index: int
    case: str
    nsbox_version: str
    program_sha256: str
    policy_sha256: str
    args: List[str]
    stdin_sha256: Optional[str]       # None: not read (a case that did not run)
    result: Optional[Dict[str, Any]]  # the nsbox.result/1 object; None when the case did not run
    not_run: Optional[str]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


def _field(d: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    v = d.get(key)
    if not isinstance(v, kind) or (isinstance(v, bool) and kind is int):
        raise NsboxError("%s: %s: expected %s" % (where, key, kind.__name__))
    return v


def _observation(d: Any, where: str) -> Observation:
    if not isinstance(d, dict) or d.get("schema") != OBSERVATION_SCHEMA:
        raise NsboxError("%s: not an observation (schema %s)" % (where, OBSERVATION_SCHEMA))
    prog = _field(d, "program", dict, where)
    inv = _field(d, "invocation", dict, where)
    stdin = inv.get("stdin")
    result = d.get("result")
    if result is not None and not isinstance(result, dict):
        raise NsboxError("%s: result: expected an object or null" % where)
    args = _field(inv, "args", list, where)
    return Observation(
        observation_id=_field(d, "observation_id", str, where), run_id=_field(d, "run_id", str, where),
        case_index=_field(d, "case_index", int, where), case=_field(d, "case", str, where),
        nsbox_version=_field(d, "nsbox_version", str, where), program_sha256=_field(prog, "sha256", str, where),
        policy_sha256=_field(d, "policy_sha256", str, where), args=[str(a) for a in args],
        stdin_sha256=_field(stdin, "sha256", str, where) if isinstance(stdin, dict) else None,
        result=result, not_run=d.get("not_run") if isinstance(d.get("not_run"), str) else None, raw=d)


def read_observations(path: PathLike) -> List[Observation]:
    """The lines of an --observe file. Only their shape is checked here;
    nsbox checks each id against its line when it replays them."""
    out: List[Observation] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            where = "%s:%d" % (os.fspath(path), n)
            try:
                d = json.loads(line)
            except ValueError as e:
                raise NsboxError("%s: not JSON: %s" % (where, e)) from e
            out.append(_observation(d, where))
    return out


def _with_flags(client: Client, flags: Sequence[str]) -> Client:
    """The same nsbox and options, plus @flags for this one command."""
    return Client(client.nsbox, [*client.extra_args, *flags], client.dedent)


def judge(spec: SpecLike, observe: Optional[PathLike] = None, *, client: Optional[Client] = None) -> Verdict:
    """Run the spec's cases (a dict, or the path of a SPEC.json); with
    ``observe``, also write each case's observation to that path (created
    or truncated; refused inside a directory the program is given)."""
    c = client or Client()
    if observe is not None:
        c = _with_flags(c, ["--observe", os.fspath(observe)])
    return c.judge(spec)


def replay(observations: PathLike, spec: SpecLike, *, client: Optional[Client] = None) -> Verdict:
    """Judge the stored observations against ``spec``'s expectations; no
    sandbox starts. The Verdict's ``raw["replayed"]`` is True. Raises
    NsboxError (returncode 125) when the spec runs something other than
    what was observed, or the file is malformed; the message says what."""
    v = _with_flags(client or Client(), ["--replay", os.fspath(observations)]).judge(spec)
    if v.raw.get("replayed") is not True:
        raise NsboxError("nsbox judge --replay gave a verdict not marked replayed")
    return v
