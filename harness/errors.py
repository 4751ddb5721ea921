"""The one exception type that reaches the user as a one-line error."""


class UserError(Exception):
    """Bad input or a missing prerequisite: printed as one line, exit status 2.

    The message names the problem and, where there is one, the fix.
    """

    exit_code = 2
