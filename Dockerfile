# `teamvault-mcp serve --http` in a container: one replica of the service behind a load balancer
# (README: Running several replicas).
#
#   docker build -t teamvault-mcp .
#   docker run -p 8000:8000 -e TEAM_VAULT_URL=https://vault.example.com -e TEAM_VAULT_API_KEY=osync_... \
#     -e TEAM_VAULT_HTTP_TOKEN="$(openssl rand -hex 32)" teamvault-mcp 0.0.0.0:8000 --insecure-bind --stateless
#
# The arguments after the image name replace CMD below and follow `serve --http`.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The project from the source copied in (what the wheel is built from), then the sources go.
WORKDIR /src
COPY pyproject.toml setup.cfg MANIFEST.in README.md LICENSE ./
COPY teamvault_mcp ./teamvault_mcp
RUN pip install . && rm -rf /src

# Not root: a numeric user, so that Kubernetes' runAsNonRoot can check it. Its home holds the content cache.
RUN groupadd --gid 10001 teamvault \
    && useradd --uid 10001 --gid 10001 --create-home --home-dir /home/teamvault --shell /usr/sbin/nologin teamvault
USER 10001:10001
WORKDIR /home/teamvault

EXPOSE 8000
# Liveness without curl (the slim image has none): /healthz answers "ok" while the server serves.
# It asks port 8000: give another port in the arguments, and give the health check that port too.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]

ENTRYPOINT ["teamvault-mcp", "serve", "--http"]
# All interfaces of the container, without TLS: its port is reached only through what publishes it, a load
# balancer or an ingress that terminates TLS (give --tls-cert and --tls-key instead to serve HTTPS yourself).
CMD ["0.0.0.0:8000", "--insecure-bind"]
