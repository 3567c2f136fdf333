#!/usr/bin/env python3
"""pushpipe filter plugin: muted words.

Speaks pushpipe's plugin protocol (docs/plugins.md): one JSON object per line on stdin,
one answer per line on stdout naming the request id. Diagnostics go to stderr, which
pushpipe copies into its log.
"""
import json
import re
import sys

config = {}
muted = set()


def words(text):
    return [word for word in (part.strip().lower() for part in text.split(",")) if word]


def handle(request):
    kind = request.get("type")
    if kind == "configure":
        config.update(request.get("config", {}))
        muted.clear()
        muted.update(words(config["words"]))
        return {}
    if kind == "filter":
        event = request["event"]
        body = event.get("body") or {}
        if body.get(config.get("urgent_field", "urgent")) is True:
            return {"event": event}
        for field in words(config.get("fields", "title,message")):
            value = body.get(field)
            if not isinstance(value, str):
                continue
            found = muted.intersection(re.findall(r"\w+", value.lower()))
            if found:
                return {"drop": "mentions a muted word in %s" % field, "code": "muted"}
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
        print("mute-words: %s" % error, file=sys.stderr, flush=True)
        answer = {"id": request.get("id"), "error": str(error)}
    print(json.dumps(answer), flush=True)
