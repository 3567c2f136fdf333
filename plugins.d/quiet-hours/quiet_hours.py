#!/usr/bin/env python3
"""pushpipe filter plugin: quiet hours.

Speaks pushpipe's plugin protocol (docs/plugins.md): one JSON object per line on stdin,
one answer per line on stdout naming the request id. Diagnostics go to stderr, which
pushpipe copies into its log.
"""
import json
import sys
from datetime import datetime, timezone

config = {}


def minutes(text):
    hours, _, mins = text.partition(":")
    return int(hours) * 60 + int(mins or 0)


def in_window(moment, start, end):
    if start == end:
        return False
    if start < end:
        return start <= moment < end
    return moment >= start or moment < end


def handle(request):
    kind = request.get("type")
    if kind == "configure":
        config.update(request.get("config", {}))
        minutes(config["start"]), minutes(config["end"])  # fail early on a bad time
        return {}
    if kind == "filter":
        event = request["event"]
        body = event.get("body") or {}
        if body.get(config.get("urgent_field", "urgent")) is True:
            return {"event": event}
        moment = datetime.fromtimestamp(event["time"], tz=timezone.utc)
        now = moment.hour * 60 + moment.minute
        if in_window(now, minutes(config["start"]), minutes(config["end"])):
            return {"drop": "quiet hours %s-%s UTC" % (config["start"], config["end"]), "code": "quiet_hours"}
        return {"event": event}
    raise ValueError("unknown request type %r" % kind)


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    request = json.loads(line)
    try:
        answer = {"id": request.get("id"), "result": handle(request)}
    except Exception as error:  # report, never die on one bad request
        print("quiet-hours: %s" % error, file=sys.stderr, flush=True)
        answer = {"id": request.get("id"), "error": str(error)}
    print(json.dumps(answer), flush=True)
