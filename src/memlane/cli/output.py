"""How the CLI talks to the terminal: one-line errors with exit code 2, escaped stored text, JSON on stdout."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer._click import exceptions as click_exc  # typer vendors click; its errors are the ones raised
from typer.core import TyperGroup

from memlane.errors import MemlaneError
from memlane.security.terminal import json_safe, one_line, printable

#: Exit code of every refused command: a memlane error or a usage error.
ERROR_EXIT = 2

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def show(text: str) -> str:
    """Stored text ready for a rich markup string: terminal escapes made visible, markup brackets escaped."""
    return escape(printable(text))


def error_line(message: str) -> str:
    """The one line printed for an error."""
    return f"error: {one_line(message)}"


def fail(message: str, code: int = ERROR_EXIT) -> NoReturn:
    """Print one error line to stderr and exit."""
    sys.stderr.write(error_line(message) + "\n")
    sys.stderr.flush()
    raise typer.Exit(code)


def dump(data: Any) -> None:
    """Write JSON to stdout, with any character a terminal would act on escaped."""
    text = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write(json_safe(text) + "\n")


class OneLineErrors(TyperGroup):
    """The ``memlane`` command group: every usage error and every ``MemlaneError`` ends the command with one line
    on stderr and exit code 2, never a traceback or a boxed usage message.
    """

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click_exc.NoArgsIsHelpError as exc:
            sys.stdout.write((exc.ctx.get_help() if exc.ctx else "") + "\n")
            code = 0
        except click_exc.ClickException as exc:
            sys.stderr.write(error_line(exc.format_message()) + "\n")
            code = ERROR_EXIT
        except typer.Abort:
            sys.stderr.write(error_line("aborted") + "\n")
            code = 1
        except MemlaneError as exc:
            sys.stderr.write(error_line(str(exc)) + "\n")
            code = ERROR_EXIT
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)
