# GPU Portal web, worker and beat image.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    DJANGO_SETTINGS_MODULE=portal.settings.production

RUN apt-get update \
 && apt-get install -y --no-install-recommends curl git \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 1000 portal

WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt

COPY --chown=portal:portal . .
# collectstatic only needs importable settings, not real secrets or a database.
RUN SECRET_KEY=collectstatic-only-placeholder-key-0123456789-abcdefghijklmnopqrstuvwxyz \
    ALLOWED_HOSTS=localhost DATABASE_URL=postgres://build@localhost/build CACHE_URL=redis://localhost:6379/1 \
    CELERY_BROKER_URL=redis://localhost:6379/0 \
    python manage.py collectstatic --noinput \
 && mkdir -p /app/var && chown -R portal:portal /app/var /app/staticfiles

USER portal
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --retries=3 CMD curl -fsS http://127.0.0.1:8000/healthz || exit 1
CMD ["gunicorn", "portal.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--worker-class", "gthread", "--threads", "4", "--access-logfile", "-"]
