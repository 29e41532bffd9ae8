"""The ``irlscrapy`` command.

irlscrapy invitro serve --profile P --seed S [--log FILE]
    serve an in-vitro web; prints one JSON line (see irlscrapy.invitro.serve)
irlscrapy invitro urls --profile P --seed S --count N [--policy rfc9309|scrapy]
    print the first N HTML page URLs a breadth-first crawl of that web downloads
irlscrapy report JOBDIR [JOBDIR ...] [--out DIR]
    write the report of a finished crawl (its JOBDIR or IRL_STATE_DIR): report.html with
    PNG plots, and report.json, into DIR (default JOBDIR/report); prints the page's path.
    Several JOBDIRs, those of a multi-agent crawl's agents, make one report of the whole
    crawl (--out required)
irlscrapy check JOBDIR
    verify a crawl's state directory (JOBDIR or IRL_STATE_DIR) while no crawl runs on it:
    every file read whole, checksums and segment sequences checked; lists each damaged
    file and what is wrong with it; exits 1 if any
irlscrapy repair JOBDIR
    mend a damaged state directory so the crawl resumes: keeps every record that is
    whole, rebuilds what is derived, deletes what is only a cache, and says per file
    what it did and what was lost; then checks it again
irlscrapy agents seed --redis URL --crawl ID [--partitions P] [--private-suffixes] SEEDS
    send seed URLs (URL,URL,... or a file of one URL per line) to a multi-agent crawl's
    owners; a new crawl is created with P partitions (IRL_AGENT_PARTITIONS) and its PLDs
    as IRL_STAR_PRIVATE_SUFFIXES says
irlscrapy agents status --redis URL --crawl ID [--json]
    the crawl's agents: alive or not, partitions, pages and rates, URLs exchanged,
    outbox, and the exchange lag (batches sent to each and not yet read, the oldest's age)
irlscrapy agents leave --redis URL --crawl ID [--wait S] AGENT
    ask a running agent to leave the crawl: it finishes its fetches, hands its partitions
    and the URLs it holds to the others, and stops (with --wait, wait up to S seconds
    for it to be gone)
irlscrapy agents remove --redis URL --crawl ID AGENT
    remove a member that no process runs as and that will not come back (its machine is
    gone): its partitions go to the others, what it held is lost
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from irlscrapy.exceptions import IrlscrapyError, ReportError
from irlscrapy.invitro.profiles import PROFILES


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="irlscrapy", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    invitro = commands.add_parser("invitro", help="the simulated web")
    sub = invitro.add_subparsers(dest="action", required=True)
    for name, helptext in (
        ("serve", "serve a web on loopback until SIGINT/SIGTERM"),
        ("urls", "list HTML page URLs in breadth-first order"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--profile", choices=sorted(PROFILES), default="tiny")
        p.add_argument("--seed", type=int, default=0)
    sub.choices["serve"].add_argument("--log", type=Path, help="append the request log here")
    urls = sub.choices["urls"]
    urls.add_argument("--count", type=int, required=True)
    urls.add_argument("--policy", choices=("rfc9309", "scrapy"), default="scrapy")
    report = commands.add_parser("report", help="write a finished crawl's report")
    report.add_argument(
        "jobdirs",
        type=Path,
        nargs="+",
        metavar="JOBDIR",
        help="the crawl's JOBDIR (or IRL_STATE_DIR); several: every agent's of one crawl",
    )
    report.add_argument(
        "--out",
        type=Path,
        help="output directory (default JOBDIR/report; several JOBDIRs: required)",
    )
    for name, helptext in (
        ("check", "verify a crawl's state directory"),
        ("repair", "mend a damaged state directory"),
    ):
        commands.add_parser(name, help=helptext).add_argument(
            "jobdir", type=Path, metavar="JOBDIR", help="the crawl's JOBDIR (or IRL_STATE_DIR)"
        )
    agents = commands.add_parser("agents", help="a multi-agent crawl")
    sub = agents.add_subparsers(dest="action", required=True)
    seed = sub.add_parser("seed", help="send seed URLs to the crawl's agents")
    status = sub.add_parser("status", help="show the crawl's agents")
    leave = sub.add_parser("leave", help="ask an agent to hand its partitions over and stop")
    remove = sub.add_parser("remove", help="remove a member that will not come back")
    for p in (seed, status, leave, remove):
        p.add_argument("--redis", required=True, help="the crawl's IRL_REDIS_URL")
        p.add_argument("--crawl", required=True, help="the crawl's IRL_CRAWL_ID")
    seed.add_argument(
        "--partitions", type=int, help="P of a new crawl (default IRL_AGENT_PARTITIONS's)"
    )
    seed.add_argument(
        "--private-suffixes",
        action="store_true",
        help="a new crawl's PLDs under the private suffixes too (IRL_STAR_PRIVATE_SUFFIXES)",
    )
    seed.add_argument("seeds", help="URL,URL,... or a file of one URL per line")
    status.add_argument("--json", action="store_true", help="one JSON object per agent")
    leave.add_argument("agent", help="the agent's IRL_AGENT_ID")
    remove.add_argument("agent", help="the agent's IRL_AGENT_ID")
    leave.add_argument(
        "--wait", type=float, default=0.0, help="seconds to wait for it to be gone (default 0)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "report":
            print(_report(args.jobdirs, args.out))
        elif args.command in ("check", "repair"):
            return _check(args.jobdir, repair=args.command == "repair")
        elif args.command == "agents":
            from irlscrapy.distributed.commands import leave, remove, seed, status

            if args.action == "seed":
                print(
                    seed(args.redis, args.crawl, args.seeds, args.partitions, args.private_suffixes)
                )
            elif args.action == "leave":
                print(leave(args.redis, args.crawl, args.agent, args.wait))
            elif args.action == "remove":
                print(remove(args.redis, args.crawl, args.agent))
            else:
                print(status(args.redis, args.crawl, args.json))
        elif args.action == "serve":
            from irlscrapy.invitro.serve import serve

            serve(args.profile, args.seed, args.log)
        else:
            _urls(args.profile, args.seed, args.count, args.policy)
    except IrlscrapyError as exc:
        print(f"irlscrapy: {exc}", file=sys.stderr)
        return 2
    return 0


def _check(jobdir: Path, repair: bool) -> int:
    """``irlscrapy check`` (and ``repair``, which checks again after): 0 if the state
    directory is whole, else 1."""
    from irlscrapy.state.check import check_state, repair_state

    def say(part: str) -> None:
        print(f"  reading {part}", file=sys.stderr)

    if repair:
        for line in repair_state(jobdir, say) or ["nothing to mend"]:
            print(f"repair: {line}")
    damage = check_state(jobdir, say)
    for problem in damage:
        print(f"damaged: {problem}")
    if damage:
        print(f"{jobdir}: {len(damage)} damaged; run `irlscrapy repair {jobdir}`")
        return 1
    print(f"{jobdir}: no damage found")
    return 0


def _report(jobdirs: list[Path], out: Path | None) -> Path:
    from irlscrapy.report.render import write_agents_report, write_report
    from irlscrapy.startcheck import unwritable

    problem = unwritable(out) if out is not None else None
    if problem is not None:
        raise ReportError(f"--out {out}: {problem}; give a directory this user may write to")

    if len(jobdirs) == 1:
        return write_report(jobdirs[0], out or jobdirs[0] / "report")
    if out is None:
        raise ReportError(
            f"{len(jobdirs)} JOBDIRs make one report of the whole crawl, which belongs to "
            "none of them: give --out DIR for it"
        )
    return write_agents_report(jobdirs, out)


def _urls(profile: str, seed: int, count: int, policy: str) -> None:
    from irlscrapy.invitro.profiles import get_profile
    from irlscrapy.invitro.web import InVitroWeb
    from irlscrapy.oracle.groundtruth import CrawlPolicy, crawl_order

    web = InVitroWeb(get_profile(profile), seed)
    crawl_policy = CrawlPolicy(robots=policy)
    printed = 0
    for url, reply in crawl_order(web, crawl_policy):
        if printed >= count:
            break
        if (
            reply.kind == "page"
            and reply.status == 200
            and len(reply.body) <= crawl_policy.max_bytes
        ):
            print(url)
            printed += 1
