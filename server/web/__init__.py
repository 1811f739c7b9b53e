"""Watch it live: the board, the bots and the games in a browser, served by the referee's process.

``--web HOST:PORT`` on ``craits tournament run/resume``, ``craits ladder run`` and ``craits serve``
starts :class:`~server.web.app.WebServer` beside the games (:func:`watching`); ``craits web DIR``
serves a tournament's or a ladder's folder read-only. See docs/web.md.
"""
