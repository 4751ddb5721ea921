"""Run by gvrun (--control-script) inside GVSoC's own Python, never imported by pulp-odl.

GVSoC's power engine reports the energy of a capture window, opened and closed by writing magic words
to the first word of the memory instance marked `power_trigger` (pulp-open: L1 bank 0, 0x10000000);
unmodified programs never write them. Through the proxy this script opens the window before the first
cycle and closes it once the program has exited, so the report covers the whole run, as the embedded
model's `energy` does. The proxy's accesses are debug requests: they take no time and no energy, and
the word the opening write replaced is written back before the program starts.
"""
import os

import gvsoc.gvsoc_control as gvcontrol

TRIGGER = 0x10000000   # pulp-open's L1 bank 0, offset 0 (gvsoc-pulp chips/pulp_open/l1_subsystem.py)
START = 0xABBAABBA     # core/models/memory/memory.cpp: start_capture
STOP = 0xDEADCACA      # the same file: stop_capture, which writes power_report.csv
DONE_ENV = "PULP_ODL_POWER_DONE"   # the file to write once the report is (gvsoc_power.DONE_ENV)


def target_control(proxy):
    router = gvcontrol.Router(proxy)
    kept = router.mem_read_int(TRIGGER, 4)
    router.mem_write_int(TRIGGER, 4, START)
    router.mem_write_int(TRIGGER, 4, kept)
    proxy.run()
    proxy.wait_sim_finished()
    router.mem_write_int(TRIGGER, 4, STOP)
    code = proxy.reader.sim_exit_code
    # The report is written: say so, and the program's status, to pulp-odl, which stops a launcher that
    # then never returns (its proxy reader can spin once GVSoC has exited)
    done = os.environ.get(DONE_ENV)
    if done:
        with open(done, "w") as f:
            f.write(f"{code}\n")
    return code
