"""The one exception type of the package."""


class TccError(RuntimeError):
    """A failed tcc call. str(e) is the runtime's, compiler's or package's
    one-line message; e.status the kind, as the C API's tcc_status_string
    names it ("bad argument", "i/o error", ...)."""

    def __init__(self, message, status="bad argument"):
        super().__init__(message)
        self.status = status
