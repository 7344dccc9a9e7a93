#!/bin/bash
# Lambda Web Adapter entry point: the adapter forwards invocations to this server on $PORT.
# The layer is at /opt/python; the function's own code and requirements are in the task root.
export PYTHONPATH="/opt/python:${LAMBDA_TASK_ROOT:-$(dirname "$0")}${PYTHONPATH:+:$PYTHONPATH}"
exec python -m uvicorn --app-dir "${LAMBDA_TASK_ROOT:-$(dirname "$0")}" --host 127.0.0.1 \
  --port "${AWS_LWA_PORT:-${PORT:-8000}}" --no-access-log --timeout-keep-alive 60 app:app
