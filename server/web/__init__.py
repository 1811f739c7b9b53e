"""Watch it live: the board, the bots and the games in a browser.

``--web HOST:PORT`` on ``craits tournament run/resume``, ``craits ladder run``, ``craits serve``
and ``craits worker`` starts :class:`~server.web.app.WebServer` in a process of its own beside
the games (:func:`~server.web.serve.watching`, :mod:`server.web.process`), fed their records
by the referee's process; ``craits web DIR`` serves a tournament's or a ladder's folder
read-only. See docs/web.md.
"""
