# cython: language_level=3
# Copy, deepcopy and pickle through __getstate__/__setstate__, written once
# for the compiled cores that carry their own state (Heap, TimingWheel,
# TTLRing): the C half of dq_core._pickling.copied_by_state, which gives the
# pure twins the same three methods.  Each core keeps its own def methods,
# since their docstrings are the class's, and each is one call to a function
# here.  Everything is inline: nothing here costs a call.


# new, a fresh object of self's class, given self's state: a shallow copy
cdef inline object copied(object self, object new):
    new.__setstate__(self.__getstate__())
    return new


# new given a deep copy of self's state, registered in memo first: an item
# may refer back to the object
cdef inline object deep_copied(object self, object new, object memo):
    from copy import deepcopy

    memo[id(self)] = new
    new.__setstate__(deepcopy(self.__getstate__(), memo))
    return new


# what pickle stores: the public class's name and the state, which restore
# rebuilds on the implementation in use (a pickle loads in either)
cdef inline tuple reduced(object self, str name):
    from dq_core._pickling import restore

    return restore, (name, self.__getstate__())
