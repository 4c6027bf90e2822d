# cython: language_level=3
# time.monotonic() read in C, shared by the compiled cores whose default
# clock it is (_delaycore, _wheelcore, _aioqueuecore): see dq_monotonic in
# src/include/dq_shortcuts.h (a shortcut on Linux, public calls elsewhere).

from _shortcuts cimport dq_monotonic
