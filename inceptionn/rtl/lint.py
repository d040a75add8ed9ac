"""The lint of the Verilog `make verilog` writes: ``verilator --lint-only -Wall``.

Warnings are parsed here; these are waived (and counted in the output), each because it is how Amaranth's Verilog back-end writes a
design that Amaranth has already width- and type-checked:

- DECLFILENAME: Amaranth writes a design and all its submodules (``top.sub``) into one
  file, so module names never match the file name.
- PROCASSINIT: every register gets its init (FPGA power-up) value on its declaration.
- WIDTHEXPAND, WIDTHTRUNC: Amaranth fixes every operand's width itself and emits
  constants and operands at their own width (``x + 2'h2``) or a wide shift assigned to
  a 1-bit net (``bit_select``); Verilog's extension/truncation then does exactly what
  Amaranth's semantics say (``.eq`` truncates, operands zero/sign-extend).
- CASEINCOMPLETE: ``casez`` blocks come after a default assignment of every target in
  the same ``always @*``, so an uncovered value keeps the default; no latch is made.
- CMPCONST, UNSIGNED: comparisons made constant by the operand's range, which Python
  loops over byte lanes produce for the first/last lane (``a_off <= 31`` on 5 bits);
  synthesis folds them.
- UNUSEDSIGNAL, for *alias wires only*: Amaranth keeps every named Signal and every
  field view of a struct payload (``i__payload.data``) as a wire driven by one plain
  ``assign``, for debugging, even where logic reads the original net. A flagged signal
  is waived only when its module declares it, assigns it once, and nothing reads it.
- UNUSEDSIGNAL, for unused *bits* of a signal that is otherwise read: Amaranth's
  anonymous temporaries (``$12[8]``: ``x + 1`` is one bit wider than ``x``, assigning it
  back drops the carry by definition), and registers that hold a whole beat or field of
  which the logic reads only some bytes (the packet matcher's header window, the RX
  shim whose k byte the receiver does not need). A signal read nowhere still fails.
- UNUSEDSIGNAL for anonymous temporaries (``$2017``): nets the back-end itself made
  while lowering an expression, some of whose uses it then folded away; they carry no
  design name, so no design signal can hide behind them.
- UNUSEDSIGNAL for ``rst`` of a submodule: Amaranth hands the domain's reset to every
  module that uses the clock; one whose registers are all reset-less (datapath stages,
  on purpose) leaves it unread.
- UNUSEDSIGNAL for the signals listed in ``WAIVED_SIGNALS``, each with its reason.

Everything else fails the lint, in particular an unused named signal, and (checked
here, as Verilator does not flag them) an unused input of the top module.
"""

import re
import subprocess
from pathlib import Path

from . import harness

__all__ = ["WAIVED_RULES", "WAIVED_SIGNALS", "lint", "LintResult"]

# Rules waived wholesale, with the reason (see the module docstring).
WAIVED_RULES = {
    "DECLFILENAME": "one file holds the design and its submodules",
    "PROCASSINIT": "register init values on declarations",
    "WIDTHEXPAND": "operand widths fixed by Amaranth, Verilog extension as intended",
    "WIDTHTRUNC": "assignment truncation is Amaranth's .eq semantics",
    "CASEINCOMPLETE": "casez after a default assignment: no latch",
    "CMPCONST": "range-constant comparisons from per-lane loops, folded by synthesis",
    "UNSIGNED": "range-constant comparisons from per-lane loops, folded by synthesis",
}


class LintResult:
    def __init__(self, errors, waived, by_rule):
        self.errors = errors      # warning texts that fail the lint
        self.waived = waived      # alias wires / temporaries waived
        self.by_rule = by_rule    # {rule: count} of every waived warning

    @property
    def ok(self):
        return not self.errors

    def __repr__(self):
        return f"LintResult(errors={len(self.errors)}, waived={len(self.waived)})"


# Individual signals waived, by (module path, signal), with the reason.
WAIVED_SIGNALS = {
    ("inceptionn_tx.core.ck_l4", "done"):
        "the TX engine runs its IP and L4 Checksum instances in lockstep and takes the "
        "'done' strobe of the IP one for both; this instance's copy is unread",
}

_WARN = re.compile(r"^%(Warning|Error)-?(\w*): ([^:]+):(\d+):\d+: (.*)$")
_UNUSED = re.compile(r"Signal is not used: '([^']+)'$")
_UNUSED_BITS = re.compile(r"Bits of signal are not used: '([^']+)'\[[\d:,]+\]$")


_SPANS = [None, None]   # (lines, spans) of the last file scanned


def _modules(lines):
    """[(first line, last line, module name)], 1-based line numbers.

    Called once per warning on files of ~50k lines: the scan is kept for the last list."""
    if _SPANS[0] is lines:
        return _SPANS[1]
    spans = _scan_modules(lines)
    _SPANS[:] = [lines, spans]
    return spans


def _scan_modules(lines):
    spans, start, name = [], None, None
    for i, line in enumerate(lines, 1):
        m = re.match(r"\s*module\s+(\\\S+|\w+)", line)
        if m:
            start, name = i, m.group(1)
        elif re.match(r"\s*endmodule\b", line) and start is not None:
            spans.append((start, i, name))
            start = None
    return spans


def _module_at(lines, lineno):
    for first, last, name in _modules(lines):
        if first <= lineno <= last:
            return first, last, name.lstrip("\\")
    return None


def _is_unused_reset(lines, lineno, signal, top):
    """An unread ``rst`` input of a submodule: Amaranth gives every module that uses a
    clock domain its reset, and a module whose registers are all reset-less (datapath
    pipeline stages, on purpose: no reset fan-out) does not read it."""
    span = _module_at(lines, lineno)
    if signal != "rst" or span is None or span[2] == top:
        return False
    return any(re.match(r"\s*input\s+rst\s*;", ln) for ln in lines[span[0] - 1:span[1]])


def _port_net(line):
    m = re.match(r"\s*\.(?:\\\S+ |\w+)\s*\((.*)$", line)
    return m.group(1) if m else line


_NETS: list = [None, {}]  # (lines, {(first, last): nets of that module}) of the last file


def _body_nets(lines, first, last):
    """Per line of lines[first - 1:last]: the text where a signal counts as used
    (_port_net's, plus a space), None for an attribute line. Made once per module of
    the last file: _is_alias asks about thousands of warnings' signals in the same
    module (the engines: 20 s of regex matching per file when made per warning)."""
    if _NETS[0] is not lines:
        _NETS[:] = [lines, {}]
    nets = _NETS[1].get((first, last))
    if nets is None:
        nets = _NETS[1][(first, last)] = [
            None if ln.lstrip().startswith("(*") else _port_net(ln) + " "
            for ln in lines[first - 1:last]]
    return nets


def _is_alias(lines, lineno, signal):
    """True when `signal` is, within its module, declared and only ever driven by one
    plain `assign` (an Amaranth debug alias), and read nowhere."""
    for first, last, _ in _modules(lines):
        if first <= lineno <= last:
            break
    else:
        return False
    body = lines[first - 1:last]
    escaped = "\\" + signal + " "
    if not re.fullmatch(r"\w+", signal) or any(escaped in ln for ln in body):
        # Amaranth escapes names that are not plain identifiers or are keywords (\end).
        ident = re.escape(escaped)
    else:
        ident = r"(?<![\w\\.$])" + re.escape(signal) + r"(?![\w.$])"
    # In an instance's port list (`.\\o__ready$10 (x)`) the name before the parenthesis
    # is the submodule's port, which may share the name; only the connected net counts.
    # Attribute lines (`(* keep = 32'd1 *)`) name attributes, not signals. A line that
    # does not hold the name at all is passed over before the pattern is tried.
    uses = [ln for ln, net in zip(body, _body_nets(lines, first, last))
            if net is not None and signal in net and re.search(ident, net)]
    decl = [ln for ln in uses if re.match(r"\s*(wire|reg)\b", ln)]
    assign = [ln for ln in uses if re.match(r"\s*assign\s+(\\\S+ |\w+)\s*=", ln)
              and re.match(r"\s*assign\s+" + ident, ln + " ")]
    if len(decl) != 1 or len(assign) != 1:
        return False
    # The assigned name must not appear on the right-hand side of its own assign, and
    # the declaration must not be a port.
    if re.match(r"\s*(input|output|inout)\b", decl[0]):
        return False
    return len(uses) == 2


def _unused_top_inputs(lines, top):
    """Verilator does not flag unused inputs of the top module; this does."""
    for first, last, name in _modules(lines):
        if name == top:
            break
    else:
        return [f"top module {top!r} not found"]
    body = lines[first:last - 1]    # without the module header line
    errors = []
    for ln in body:
        m = re.match(r"\s*input\s+(?:\[[^]]+\]\s*)?(\\\S+|\w+)\s*;", ln)
        if not m:
            continue
        sig = m.group(1)
        pat = re.escape(sig + " ") if sig.startswith("\\") else rf"(?<![\w\\.$]){re.escape(sig)}(?![\w.$])"
        uses = [x for x in body if re.search(pat, x + " ")
                and not re.match(r"\s*(input|wire)\b", x)]
        if not uses:
            errors.append(f"%Warning-UNUSEDINPUT: top module {top}: input {sig!r} is not used")
    return errors


def lint(path, top):
    """Run verilator --lint-only -Wall with the documented waivers on a Verilog file."""
    path = Path(path)
    exe = harness.verilator_bin() / "verilator"
    proc = subprocess.run([str(exe), "--lint-only", "-Wall", "--top-module", top, str(path)],
                          capture_output=True, text=True)
    lines = path.read_text().splitlines()
    errors, waived, by_rule = [], [], {}

    def waive(rule):
        by_rule[rule] = by_rule.get(rule, 0) + 1

    for line in (proc.stdout + proc.stderr).splitlines():
        m = _WARN.match(line)
        if not m:
            continue
        kind, rule, file, lineno, msg = m.groups()
        if kind == "Error" and rule == "" and msg.startswith("Exiting due to"):
            continue
        if rule in WAIVED_RULES:
            waive(rule)
            continue
        u = _UNUSED.search(msg)
        here = Path(file).resolve() == path.resolve()
        if rule == "UNUSEDSIGNAL" and u and here:
            span = _module_at(lines, int(lineno))
            if span and (span[2], u.group(1)) in WAIVED_SIGNALS or \
                    _is_unused_reset(lines, int(lineno), u.group(1), top):
                waived.append(u.group(1))
                waive("UNUSEDSIGNAL")
                continue
        if rule == "UNUSEDSIGNAL" and u and here and (
                re.fullmatch(r"\$\d+", u.group(1)) or _is_alias(lines, int(lineno), u.group(1))):
            waived.append(u.group(1))
            waive("UNUSEDSIGNAL")
            continue
        if rule == "UNUSEDSIGNAL" and _UNUSED_BITS.search(msg):
            # Part of a wider value read: an arithmetic temporary's carry, or a window
            # register of which only some bytes matter (see the module docstring).
            waived.append(_UNUSED_BITS.search(msg).group(1))
            waive("UNUSEDSIGNAL")
            continue
        errors.append(line)
    errors += _unused_top_inputs(lines, top)
    if proc.returncode != 0 and not errors and not by_rule:
        errors.append(f"verilator exited with {proc.returncode}: {(proc.stdout + proc.stderr)[-2000:]}")
    return LintResult(errors, waived, by_rule)
