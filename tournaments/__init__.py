"""Tournaments: round robin with seat rotation and duplicate deals, persisted and rated.

``config`` reads a tournament file, ``schedule`` makes the fair schedule,
``runner`` plays it through an injected game runner (``local`` in-process, or
``grpc_runner``: the referee) into ``server.storage.store``, ``standings`` rates the
results, ``ladder`` runs the continuous ladder and ``pages`` writes the viewer pages.
The commands are in ``server.cli.tournament``.
"""
