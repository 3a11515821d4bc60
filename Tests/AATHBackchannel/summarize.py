#!/usr/bin/env python3
"""Prints one line per scenario of behave JSON reports: suite, test id, example, status, and the
first failing step with its error. Standard library only.

    python3 summarize.py results/*.json
"""

import json
import os
import sys


def test_id(tags):
    for tag in tags:
        if tag.startswith("T0") and "-RFC" in tag:
            return tag
    return "-"


def first_failure(scenario):
    for step in scenario.get("steps", []):
        result = step.get("result") or {}
        if result.get("status") in ("failed", "undefined") or ("result" not in step and step.get("match") is None):
            message = result.get("error_message") or ""
            if isinstance(message, list):
                message = " ".join(message)
            reason = " ".join(message.split())[:220] or ("undefined step" if "result" not in step or result.get("status") == "undefined" else "")
            return f'{step.get("keyword", "").strip()} {step.get("name", "")}: {reason}'
    return ""


def main(paths):
    rows, totals = [], {}
    for path in paths:
        suite = os.path.splitext(os.path.basename(path))[0]
        try:
            with open(path) as handle:
                features = json.load(handle)
        except (OSError, ValueError) as error:
            rows.append((suite, "-", "-", "no report", str(error)))
            continue
        for feature in features or []:
            for scenario in feature.get("elements", []):
                if scenario.get("type") != "scenario":
                    continue
                status = scenario.get("status", "?")
                if status == "skipped":
                    continue
                name = scenario.get("name", "")
                example = name.split(" -- ")[1] if " -- " in name else ""
                rows.append((suite, test_id(scenario.get("tags", [])), example, status,
                             first_failure(scenario) if status != "passed" else ""))
                totals[status] = totals.get(status, 0) + 1
    print("| suite | scenario | example | result | first failing step |")
    print("| --- | --- | --- | --- | --- |")
    for suite, tid, example, status, why in rows:
        print(f"| {suite} | {tid} | {example} | {status} | {why.replace('|', '/')} |")
    print()
    print("totals:", ", ".join(f"{k} {v}" for k, v in sorted(totals.items())) or "none")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
