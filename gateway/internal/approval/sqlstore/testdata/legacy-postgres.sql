CREATE TABLE public.preflight_approvals (
    id text NOT NULL,
    principal text NOT NULL,
    server text NOT NULL,
    tool text NOT NULL,
    args_digest text NOT NULL,
    effect text NOT NULL,
    reason text NOT NULL,
    args text NOT NULL,
    args_omitted integer NOT NULL,
    state text NOT NULL,
    created bigint NOT NULL,
    expires bigint NOT NULL,
    decided_by text NOT NULL,
    decided_by_name text NOT NULL,
    decided bigint NOT NULL,
    used_at bigint NOT NULL,
    lapsed bigint NOT NULL
);

INSERT INTO public.preflight_approvals VALUES ('legacyApproval0000000A', 'alice', 'files', 'delete_file', 'sha256:/tmp/a', 'delete', 'deletes /tmp/a', '[{"name":"path","value":"/tmp/a"},{"name":"token","withheld":true}]', 0, 'pending', 1785232800000000, 4938832800000000, '', '', 0, 0, 4938832800000000);
INSERT INTO public.preflight_approvals VALUES ('legacyApproval1111111A', 'alice', 'files', 'delete_file', 'sha256:/tmp/b', 'delete', 'deletes /tmp/b', '[{"name":"path","value":"/tmp/b"},{"name":"token","withheld":true}]', 0, 'approved', 1785232801000000, 4938832800000000, 'carol', 'Carol', 1785232860000000, 0, 4938832800000000);
INSERT INTO public.preflight_approvals VALUES ('legacyApproval2222222A', 'alice', 'files', 'delete_file', 'sha256:/tmp/c', 'delete', 'deletes /tmp/c', '[{"name":"path","value":"/tmp/c"},{"name":"token","withheld":true}]', 0, 'denied', 1785232802000000, 4938832802000000, 'carol', 'Carol', 1785232860000000, 0, 4938832802000000);

ALTER TABLE ONLY public.preflight_approvals
    ADD CONSTRAINT preflight_approvals_pkey PRIMARY KEY (id);

CREATE INDEX preflight_approvals_created ON public.preflight_approvals USING btree (created);

CREATE INDEX preflight_approvals_key ON public.preflight_approvals USING btree (principal, server, tool, args_digest);

CREATE INDEX preflight_approvals_lapsed ON public.preflight_approvals USING btree (lapsed);

