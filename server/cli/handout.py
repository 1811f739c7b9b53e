"""`craits handout FILE [BOT ...]`: a folder for each student to install the bot kit and play.

    craits handout class.toml alice bob --address 192.168.1.10:50051 [-o handouts]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from server.transport.tls import CERT_FILE
from tournaments.config import load_config
from tournaments.handout import KIT_NAMES, TOKEN_FILE, write_handouts


def register_cli(sub: Any) -> None:
    parser = sub.add_parser(
        "handout",
        help="write a handout for each student's bot: the kit's wheels, a bot to start from, a README",
        description="For each bot of FILE that connects on its own (a token, no command), or each BOT "
        "named, write OUT/BOT/: wheels of the protocol package and the bot kit built from this "
        "checkout, my_bot.py (pointed at the referee, named) and a README (the address, the name, "
        "how to install and run it, where the token goes). The token is in no file and no folder "
        "name: it is printed here once, for you to give to the student.",
    )
    parser.add_argument("file", help="the tournament or ladder file the students' bots play in")
    parser.add_argument("bots", nargs="*", metavar="BOT", help="the bots to write a handout for (default: every student's bot)")
    parser.add_argument("--address", metavar="HOST:PORT",
                        help="where the students' bots reach the referee (default: the file's address, "
                        "unless it is every interface, 0.0.0.0: then this machine's address on the class network)")
    parser.add_argument("--tls-ca", metavar="FILE",
                        help="the referee's certificate to hand out when it speaks TLS (default, with tls = "
                        "\"self-signed\": the one in the file's output folder, logs/NAME/tls/, made now if it is "
                        "not there yet; give this when the referee runs with another --out)")
    parser.add_argument("--kit", choices=KIT_NAMES, default="python",
                        help="the language: python (the kit's wheels and my_bot.py, the default), java (the kit's "
                        "sources, MyBot.java, build.sh with Debian's packages or pom.xml for Maven) or cpp (the kit's "
                        "sources, my_bot.cpp, CMake)")
    parser.add_argument("-o", "--out", default="handouts", help="the folder to write them in (default: handouts)")
    parser.set_defaults(func=cmd_handout)


def cmd_handout(args: argparse.Namespace) -> int:
    config = load_config(args.file, check_paths=False)
    out = Path(args.out)
    made = write_handouts(config, args.bots, out, args.address, args.tls_ca, kit=args.kit)
    cert = made[0].folder / CERT_FILE if made else None
    extra = f", {CERT_FILE}" if cert is not None and cert.is_file() else ""
    what = {"python": "wheels/, my_bot.py", "java": "src/MyBot.java, build.sh, bot.sh, pom.xml",
            "cpp": "my_bot.cpp, build.sh, bot.sh, CMakeLists.txt"}[args.kit]
    print(f"{len(made)} handout(s) in {out}/ (each: {what}, README.md{extra}). Give each student their "
          f"folder and, separately, their token (it is in no file of the handout; the student puts it in "
          f"{TOKEN_FILE} or CRAITS_TOKEN). The tokens, shown this once:")
    for handout in made:
        print(f"  {handout.bot:<20} {handout.folder}/   token: {handout.token}")
    return 0
