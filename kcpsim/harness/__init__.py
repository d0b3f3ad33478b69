"""The servlet in kcpsim's world: the simulator with the servlet's prerequisites installed
(`world`) and `servlet run` as a real process against it (`process`).

It drives the servlet only from outside, through its command line and HTTP, and imports no
servlet module. The end-to-end tests, the chart tests and the newcomer demo (`kcpsim demo`) are
built from it.
"""
