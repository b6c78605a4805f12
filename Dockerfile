FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
# The runtime dependencies at the versions `make lock` resolved (no dev tools), in a layer
# of their own; then the project itself, its dependencies already there.
COPY requirements.lock ./
RUN pip install -r requirements.lock
COPY pyproject.toml README.md ./
COPY api ./api
COPY engine ./engine
COPY scrapers ./scrapers
COPY store ./store
RUN pip install --no-deps . \
    && pip check \
    && useradd --system --create-home --home-dir /home/nichescope --uid 10001 nichescope \
    && mkdir -p /data && chown nichescope /data

USER nichescope
ENV NICHESCOPE_DATABASE_URL=sqlite+aiosqlite:////data/nichescope.db \
    NICHESCOPE_OUTBOX_DIR=/data/outbox
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4).status == 200 else 1)"
CMD ["nichescope", "serve", "--host", "0.0.0.0", "--port", "8000"]
