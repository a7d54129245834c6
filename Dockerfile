# One image for every role; the command picks it (api, worker, sweeper, asr-server, migrate).
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    VERBATIM_DATA_DIR=/data VERBATIM_API_HOST=0.0.0.0
# The recognizer listens on localhost unless told otherwise (compose: its internal network only).

RUN useradd --system --create-home --uid 10001 verbatim && mkdir -p /data && chown verbatim /data
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY src ./src
COPY workers ./workers
COPY migrations ./migrations
RUN pip install -e .

USER verbatim
VOLUME ["/data"]
EXPOSE 8000 8700
# Exec form: the role's process is PID 1 and receives SIGTERM directly (drain on deploys).
ENTRYPOINT ["verbatim"]
CMD ["api"]
