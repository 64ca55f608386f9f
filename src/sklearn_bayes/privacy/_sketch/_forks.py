"""The live forks of the running sketch streams of this process, by fork id (held weakly).

A copy of a sketch marks its live source as a fork too (see ``PrivateCountSketch``, Notes,
"Copies are forks").
"""

import weakref


#: The live sketches of this process by fork id, to mark an original as a fork when a copy of
#: it is made (``__setstate__``); weak references, so nothing is kept alive.
_LIVE_FORKS = weakref.WeakValueDictionary()
