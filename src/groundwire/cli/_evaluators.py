"""`groundwire evaluators`: list the evaluator names that can be used."""

from __future__ import annotations

from groundwire._registry import available_evaluators
from groundwire.cli._app import app, console
from groundwire.cli._errors import guarded
from groundwire.cli._exit import help_epilog


@app.command("evaluators", epilog=help_epilog("evaluators"))
@guarded
def list_evaluators() -> None:
    """List every registered evaluator name (built-ins and plug-ins)."""
    for name in available_evaluators():
        console.print(name)
