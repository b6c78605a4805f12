FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
# The runtime dependencies at the versions `make lock` resolved (no dev tools), in a layer
# of their own; then the project itself, its dependencies already there.
COPY requirements.lock ./
RUN pip install -r requirements.lock
# Optional: a real browser, for sites that hand their session only to one (MARKETPLACE.md,
# "Since 13 September 2026"; scrapers/_browser.py). `docker build --build-arg WITH_BROWSER=1 .`
# adds Debian's `chromium` and the `browser` extra (Playwright, at the version the dev lock
# pins; Playwright's own browser downloads are never used). NICHESCOPE_MARKET_BROWSER=auto
# (the default) then finds chromium on the PATH. Without it the image is as small as before,
# and a site that asks for a browser is reported as such (or takes a pasted session).
ARG WITH_BROWSER=0
COPY requirements-dev.lock ./
RUN if [ "$WITH_BROWSER" = "1" ]; then \
        apt-get update \
        && apt-get install -y --no-install-recommends chromium \
        && rm -rf /var/lib/apt/lists/* \
        && pip install --constraint requirements-dev.lock playwright; \
    fi
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
ENV NICHESCOPE_DATABASE_URL=sqlite:////data/nichescope.db \
    NICHESCOPE_OUTBOX_DIR=/data/outbox
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4).status == 200 else 1)"
CMD ["nichescope", "serve", "--host", "0.0.0.0", "--port", "8000"]
