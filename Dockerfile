# One image for every role; the command picks it (api, worker, sweeper, asr-server, migrate).
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    VERBATIM_DATA_DIR=/data VERBATIM_API_HOST=0.0.0.0
# The recognizer listens on localhost unless told otherwise (compose: its internal network only).

# A numeric user and group (10001:10001): Kubernetes' runAsNonRoot can only verify a numeric USER,
# and the manifests' runAsUser/runAsGroup/fsGroup name the same ids (deploy/k8s).
RUN groupadd --system --gid 10001 verbatim \
    && useradd --system --create-home --uid 10001 --gid 10001 verbatim \
    && mkdir -p /data && chown 10001:10001 /data
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY src ./src
COPY workers ./workers
COPY migrations ./migrations
RUN pip install -e .

USER 10001:10001
VOLUME ["/data"]
EXPOSE 8000 8700
# Exec form: the role's process is PID 1 and receives SIGTERM directly (drain on deploys).
ENTRYPOINT ["verbatim"]
CMD ["api"]
