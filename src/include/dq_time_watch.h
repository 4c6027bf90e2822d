/* dq_time_watch.h - whether time.monotonic may have been replaced
 * (src/_aioqueuecore.pyx reads the loop's clock in C while it has not).
 *
 * From Python 3.12 (with the GIL) a dict watcher on the time module's dict
 * tells when time.monotonic may have been replaced: until the dict changes,
 * the one check made stands and no lookup is needed.  The callback runs
 * before each change, so a read after it looks again.  Elsewhere, and when
 * no watcher is free, every read looks it up.
 */
#ifndef DQ_TIME_WATCH_H
#define DQ_TIME_WATCH_H

#include "Python.h"
#include "dq_shortcuts.h"

#if DQ_DICT_WATCH
#define DQ_TIME_WATCH 1
static int dq_time_watcher = -1;
static int dq_time_seen = 0; /* time.monotonic was the original, and the dict has not changed */
static int dq_time_changed(PyDict_WatchEvent Py_UNUSED(event), PyObject *Py_UNUSED(d),
                           PyObject *Py_UNUSED(k), PyObject *Py_UNUSED(v)) {
    dq_time_seen = 0;
    return 0;
}
static void dq_time_watch(PyObject *time_dict) {
    dq_time_watcher = PyDict_AddWatcher(dq_time_changed);
    if (dq_time_watcher < 0 || PyDict_Watch(dq_time_watcher, time_dict) < 0) {
        PyErr_Clear();
        dq_time_watcher = -1;
    }
}
#else
#define DQ_TIME_WATCH 0
static int dq_time_seen = 0;
static int dq_time_watcher = -1;
static void dq_time_watch(PyObject *time_dict) {
    (void)time_dict;
}
#endif

#endif /* DQ_TIME_WATCH_H */
