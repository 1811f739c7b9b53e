"""`craits handout FILE [NAME ...]`: a folder for each student to install the bot kit and play.

    craits handout class.toml --address 192.168.1.10:50051 --web https://arena.example.org [--kit javascript]
    craits handout class.toml alice bob --address 192.168.1.10:50051 [-o handouts]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tournaments.handout import KITS


def register_cli(sub: Any) -> None:
    parser = sub.add_parser(
        "handout",
        help="write a handout for each student: the kit, a bot to start from, a README (docs/teachers.md)",
        description="For each participant of the roster FILE names (roster = ...), or each bot of FILE that "
        "connects on its own (a token, no command) in a file without a roster, or each NAME given, write OUT/NAME/: "
        "the bot kit from this checkout (--kit), a bot to start from (pointed at the referee, named), the referee's "
        "certificate when it speaks TLS, and a README (the address, the name, how to install and run it, where the "
        "token goes; with a roster also the web address, how to log in and submit, how to connect live). The token "
        "is in no file and no folder name: it is printed here once, for you to give to the student (with a roster: "
        "read from ROSTER-tokens.csv, which craits roster import wrote, and checked).",
    )
    parser.add_argument("file", help="the ladder (or tournament) file the students play in")
    parser.add_argument("bots", nargs="*", metavar="NAME", help="the students to write a handout for (default: all)")
    parser.add_argument("--address", metavar="HOST:PORT",
                        help="where the students' bots reach the referee (default: the file's address, "
                        "unless it is every interface, 0.0.0.0: then this machine's address on the class network)")
    parser.add_argument("--web", metavar="URL",
                        help="with a roster: the class's web address, as the students type it (default: "
                        "http://HOST:8080, HOST the referee's)")
    parser.add_argument("--kit", default="python", choices=list(KITS),
                        help="the language of the kit and the starting bot: python (the kit's wheels and my_bot.py, "
                        "the default), javascript (the kit and my_strategy.js), java (the kit's sources, MyBot.java, "
                        "build.sh with Debian's packages or pom.xml for Maven) or cpp (the kit's sources, "
                        "my_bot.cpp, CMake)")
    parser.add_argument("--tokens", type=Path, metavar="FILE",
                        help="with a roster: the tokens file (default: ROSTER-tokens.csv beside the roster folder)")
    parser.add_argument("--tls-ca", metavar="FILE",
                        help="the referee's certificate to hand out when it speaks TLS (default, with tls = "
                        "\"self-signed\": the one in the file's output folder, logs/NAME/tls/, made now if it is "
                        "not there yet; give this when the referee runs with another --out)")
    parser.add_argument("-o", "--out", default="handouts", help="the folder to write them in (default: handouts)")
    parser.set_defaults(func=cmd_handout)


def cmd_handout(args: argparse.Namespace) -> int:
    from participants.roster import handout_students
    from tournaments.config import load_config
    from tournaments.handout import TOKEN_FILE, write_handouts

    config = load_config(args.file, check_paths=False)
    out = Path(args.out)
    students = handout_students(config.roster, args.bots, args.tokens) if config.roster else None
    made = write_handouts(config, args.bots, out, args.address, args.tls_ca, kit=args.kit, web=args.web,
                          students=students)
    inside = sorted(p.name for p in made[0].folder.iterdir()) if made else []
    print(f"{len(made)} handout(s) in {out}/ (each: {', '.join(inside)}). Give each student their folder and, "
          f"separately, their token (it is in no file of the handout; the student puts it in {TOKEN_FILE} or "
          "CRAITS_TOKEN). The tokens, shown this once:")
    for handout in made:
        print(f"  {handout.bot:<20} {handout.folder}/   token: {handout.token}")
    if config.roster and made:
        print(f"Students log in and submit at the web address in their README (check it: the ladder must serve it, "
              f"e.g. craits ladder run {args.file} --web HOST:PORT).")
    return 0
