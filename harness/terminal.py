"""rich's Console, except when the reader of stdout goes away (`pulp-odl run x.elf | head -1`).

rich then exits the process with status 1, which would replace the status a command means to
return (the program's exit status, for `run`). Here the BrokenPipeError reaches the command, which
detaches stdout (harness.paths.detach_stdout) and returns its own status.
"""
from __future__ import annotations

import rich.console


class Console(rich.console.Console):
    def on_broken_pipe(self) -> None:
        raise BrokenPipeError
