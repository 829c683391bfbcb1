# PostgreSQL from Debian's package, for machines that cannot pull postgres:16; built by
# docker/build-local-bases.sh on top of a debootstrap root file system (ARG ROOTFS).  It takes
# the official image's settings that docker/docker-compose.yml uses: POSTGRES_USER,
# POSTGRES_PASSWORD, POSTGRES_DB and the data directory /var/lib/postgresql/data.
ARG ROOTFS=svmsvc-local/postgres:15-rootfs
FROM ${ROOTFS}
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
RUN chmod 0755 /usr/local/bin/docker-entrypoint.sh \
    && ln -s "$(ls -d /usr/lib/postgresql/*/bin | head -n 1)" /usr/local/lib/postgresql-bin \
    && install -d -o postgres -g postgres -m 0775 /var/run/postgresql \
    && install -d -o postgres -g postgres -m 0700 /var/lib/postgresql/data
ENV PATH=/usr/local/lib/postgresql-bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PGDATA=/var/lib/postgresql/data \
    LANG=C.UTF-8
VOLUME ["/var/lib/postgresql/data"]
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
