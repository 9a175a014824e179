CREATE TABLE public.audit_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.audit_records (
    id bigint NOT NULL,
    call_key text NOT NULL,
    "time" timestamp with time zone NOT NULL,
    principal text NOT NULL,
    server text NOT NULL,
    tool text NOT NULL,
    effect text NOT NULL,
    destructive boolean NOT NULL,
    decision text NOT NULL,
    reason text NOT NULL,
    approver text NOT NULL,
    dry_run boolean NOT NULL,
    level text NOT NULL,
    args_digest text NOT NULL,
    args text,
    outcome text,
    ended timestamp with time zone,
    latency_us bigint,
    retries integer DEFAULT 0 NOT NULL,
    redactions text,
    error text DEFAULT ''::text NOT NULL
);

ALTER TABLE public.audit_records ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.audit_records_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

INSERT INTO public.audit_migrations VALUES (1, 'records', '2026-11-29 00:27:04.483318+00');

INSERT INTO public.audit_records OVERRIDING SYSTEM VALUE VALUES (1, '3KcSqVjKzNy7LX5y9sXZOg', '2026-07-28 10:00:00.123456+00', 'alice', 'files', 'read_file', 'read', false, 'allow', 'reads', '', false, 'full', 'sha256:aa', '{"path":"/tmp/a"}', 'ok', '2026-07-28 10:00:00.124956+00', 1500, 0, NULL, '');
INSERT INTO public.audit_records OVERRIDING SYSTEM VALUE VALUES (2, 'ZU7h_rd5ikngucIKJRdNUw', '2026-07-28 10:00:01.123456+00', 'bob', 'files', 'delete_file', 'delete', true, 'deny', 'denied by rule', 'carol', false, 'summary', 'sha256:bb', NULL, 'error', '2026-07-28 10:00:02.123456+00', 1000000, 2, '{"aws":1}', 'boom');
INSERT INTO public.audit_records OVERRIDING SYSTEM VALUE VALUES (3, 'WvW_Np1QR5v7qxtoTEAT1g', '2026-07-28 10:00:03.123456+00', 'alice', 'git', 'push', 'write', false, 'allow', '', '', false, 'summary', 'sha256:cc', NULL, NULL, NULL, NULL, 0, NULL, '');

SELECT pg_catalog.setval('public.audit_records_id_seq', 3, true);

ALTER TABLE ONLY public.audit_migrations
    ADD CONSTRAINT audit_migrations_pkey PRIMARY KEY (version);

ALTER TABLE ONLY public.audit_records
    ADD CONSTRAINT audit_records_call_key_key UNIQUE (call_key);

ALTER TABLE ONLY public.audit_records
    ADD CONSTRAINT audit_records_pkey PRIMARY KEY (id);

CREATE INDEX audit_records_principal ON public.audit_records USING btree (principal, "time");

CREATE INDEX audit_records_server_tool ON public.audit_records USING btree (server, tool, "time");

CREATE INDEX audit_records_time ON public.audit_records USING btree ("time", id);

