"""The Craits bot kit: subclass :class:`Bot`, write ``choose``, call :func:`run`.

::

    import random
    from craits_bot import Bot, run

    class MyBot(Bot):
        def choose(self, request):
            return random.choice(request.legal_actions)

    run(MyBot())

``pb`` is the generated protocol module (``craits.v1.referee_pb2``): its enums
(``pb.RANK_EIGHT``, ``pb.SUIT_HEARTS``, ``pb.DECISION_KIND_ANSWER_COUNT``, ...)
are what the messages a bot receives are made of.
"""

import craits.grpc_io  # noqa: F401  # first: it chooses gRPC's I/O layer before grpc is imported
from craits.v1 import referee_pb2 as pb

from . import cards
from .bot import Bot, Dispatcher, Request, action_id
from .runner import ExitCode, Runner, run

__version__ = "0.1.0"

__all__ = ["Bot", "Dispatcher", "ExitCode", "Request", "Runner", "action_id", "cards", "pb", "run"]
