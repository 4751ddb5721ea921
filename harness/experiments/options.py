"""Command-line options shared by the commands that run experiments (`experiment`, `regress`)."""
from __future__ import annotations


def executor_arguments(p) -> None:
    # the address type lives with the executor, imported only when the option is given
    def address(text):
        from harness.experiments.dask_executor import scheduler_arg
        return scheduler_arg(text)

    address.__name__ = "address"
    p.add_argument("--executor", choices=("local", "dask"), default="local",
                   help="where the kernel runs happen: this host's processes (default) or a Dask cluster")
    p.add_argument("--scheduler", type=address, metavar="ADDRESS",
                   help="with --executor dask: the scheduler to use, [tcp://]HOST[:PORT] as 'dask scheduler' prints "
                        "it (default: a LocalCluster of --jobs worker processes on this host)")
