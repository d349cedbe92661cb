"""The agent memory on SQLite: the repository's interface (``agentmem.seam``) over the
``am_*`` tables of a data dir's ``memory.db`` (``schema``), the archive file
``memory.archive.db`` (``archive``), the ``StoreSide`` (``side``) and the layer's move in
and out of the plain form (``transfer``). The same file names as ``agentmem.postgres``
where the two do the same job; neither imports the other."""
