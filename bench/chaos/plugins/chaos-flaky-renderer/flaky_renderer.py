#!/usr/bin/env python3
"""Renderer plugin of the adversarial chaos soak (bench/README.md): one APNs alert per token,
with the event's id in the payload, and an error for a share of requests while the soak's
fault file exists, so broadcasts stop on a random page."""
import json
import os
import random
import sys

config = {}


def handle(request):
    kind = request.get("type")
    if kind == "configure":
        config.update(request.get("config", {}))
        return {}
    if kind == "render":
        if os.path.exists(config["faults_file"]) and random.random() < float(config.get("rate", 0.2)):
            raise RuntimeError("chaos: this page's render fails")
        body = request["event"].get("body") or {}
        payload = {"aps": {"alert": {"title": "Broadcast", "body": str(body.get("text", ""))}}, "id": body.get("id")}
        return {"notifications": [{"token": token["value"], "payload": payload, "options": {"push_type": "alert"}}
                                  for token in request.get("tokens", [])]}
    raise ValueError("unknown request type %r" % kind)


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    request = json.loads(line)
    try:
        answer = {"id": request.get("id"), "result": handle(request)}
    except Exception as error:
        print("chaos-flaky-renderer: %s" % error, file=sys.stderr, flush=True)
        answer = {"id": request.get("id"), "error": str(error)}
    print(json.dumps(answer), flush=True)
