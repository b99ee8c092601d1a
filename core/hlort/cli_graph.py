"""``hlort graph MODULE`` and ``hlort compile --dump-dir D --graph``: HTML pages with an SVG
graph of a module (hlort.graph), one per pass in a dump directory, with an index page."""

from __future__ import annotations

import argparse
import os
import sys
from html import escape
from pathlib import Path

from hlort.errors import InvalidArgument

ENGINE_HELP = "layout: dot (Graphviz), python (built in), auto (dot when installed; default)"


def add_graph_command(sub) -> None:
    p = sub.add_parser("graph", help="draw a module as an HTML page with an SVG graph")
    p.add_argument("module", metavar="MODULE")
    p.add_argument("-o", "--output", metavar="OUT.html", help="default: MODULE's name + .html")
    p.add_argument("--engine", choices=("auto", "dot", "python"), default="auto", help=ENGINE_HELP)
    p.add_argument(
        "--optimized",
        action="store_true",
        help="draw the module after the passes of the backend (--platform, default the default)",
    )
    p.add_argument("--platform", metavar="P")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="tracebacks")
    p.set_defaults(handler=cmd_graph)


def add_compile_options(p) -> None:
    p.add_argument("--graph", action="store_true", help="with --dump-dir: an HTML graph per pass")
    p.add_argument("--graph-engine", choices=("auto", "dot", "python"), default="auto")


def cmd_graph(args: argparse.Namespace) -> int:
    from hlort.graph import module_html
    from hlort.runtime import compile as compile_module
    from hlort.runtime.program import parse_program, read_program_file

    text, fmt = read_program_file(args.module)
    module = parse_program(text, fmt, source_name=args.module)
    if args.optimized:
        module = compile_module(module, args.platform).module
    out = Path(args.output or Path(args.module).with_suffix(".html").name)
    out.write_text(module_html(module, engine=args.engine))
    print(f"wrote {out}")
    return 0


def after_compile(args: argparse.Namespace, exe) -> None:
    """``--graph``: a page for every module the pipeline dumped, the backend's optimized
    module, and ``index.html`` linking them in pass order."""
    if not getattr(args, "graph", False):
        return
    if not args.dump_dir:
        raise InvalidArgument("--graph draws the dumped modules: give --dump-dir D as well")
    from hlort.graph import module_html
    from hlort.text.parser import parse_module

    dump = Path(args.dump_dir)
    pages: list[tuple[str, str]] = []
    for hlo in sorted(dump.glob("*.hlo")):
        module = parse_module(hlo.read_text(), source_name=str(hlo), verify=False)
        page = hlo.with_suffix(".html")
        page.write_text(module_html(module, title=hlo.stem, engine=args.graph_engine))
        pages.append((page.name, hlo.stem))
    final = dump / "optimized.html"
    final.write_text(module_html(exe.module, title="optimized", engine=args.graph_engine))
    pages.append((final.name, f"optimized ({exe.backend.platform})"))
    links = "".join(f'<li><a href="{escape(n)}">{escape(t)}</a></li>' for n, t in pages)
    (dump / "index.html").write_text(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>passes</title>'
        f"</head><body><h1>{escape(exe.name)}: after each pass</h1><ol>{links}</ol></body></html>\n"
    )
    print(f"hlort: wrote {len(pages)} graph page(s) in {os.fspath(dump)}", file=sys.stderr)
