"""``check``: the doctor's checks of the configuration, or of a running ``serve --http`` endpoint from outside."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

from teamvault_mcp.commands.shared import PROG, configure_logging, log_level


def check(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    from teamvault_mcp.doctor import Check, Doctor, report_json, report_text

    if args.http is not None:
        from teamvault_mcp.server.http_check import check_endpoint

        secret = environ.get("TEAM_VAULT_HTTP_TOKEN", "").strip() or environ.get("TEAM_VAULT_API_KEY", "").strip()
        configure_logging(log_level(environ), secret or None)
        ca_file = environ.get("SSL_CERT_FILE", "").strip() or None  # the CAs an https endpoint is checked against
        found = check_endpoint(args.http, secret or None, ca_file)
        checks = [Check(c.name, c.status, c.detail, c.hint) for c in found]
        ok = all(check.status == "pass" for check in checks)
        sys.stdout.write(report_json(checks, ok) if args.json else report_text(checks, ok))
        return 0 if ok else 1

    configure_logging(log_level(environ), environ.get("TEAM_VAULT_API_KEY", "").strip())
    doctor = Doctor(environ)
    try:
        checks = doctor.run()
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG} check: interrupted\n")
        return 130
    sys.stdout.write(report_json(checks, doctor.ok) if args.json else report_text(checks, doctor.ok))
    return 0 if doctor.ok else 1
