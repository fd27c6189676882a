"""``lits view``: a run's page (report.html), optionally served on 127.0.0.1."""

from __future__ import annotations

import argparse
from pathlib import Path

from lits.cli.errors import UserError


def add_view_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("view", help="write the run's page (report.html): tree viewer, costs, instances")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run's save dir (finished or still running)")
    p.add_argument("--out", default=None, metavar="FILE", help="where to write the page (default RUN_DIR/report.html)")
    p.add_argument(
        "--serve",
        action="store_true",
        help="also serve the run on 127.0.0.1 (re-read on every page load) and open a browser",
    )
    p.add_argument("--port", type=int, default=8765, help="port for --serve (default 8765; 0 picks a free one)")
    p.add_argument("--no-open", action="store_true", help="with --serve: do not open a browser")
    p.set_defaults(func=cmd_view)


def cmd_view(args: argparse.Namespace) -> int:
    from lits.view.html import write_report
    from lits.view.model import NotARunError

    root = Path(args.run_dir)
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port must be between 0 and 65535, not {args.port}")
    try:
        target = write_report(root, Path(args.out) if args.out else None)
    except NotARunError as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:
        raise UserError(f"cannot write the page: {exc.strerror or exc} ({exc.filename or args.out})") from None
    print(f"wrote {target}", flush=True)
    if args.serve:
        from lits.view.serve import serve

        try:
            serve(root, args.port, open_browser=not args.no_open)
        except OSError as exc:
            raise UserError(
                f"cannot serve on 127.0.0.1:{args.port} ({exc.strerror or exc}); pick another with --port"
            ) from None
    return 0
