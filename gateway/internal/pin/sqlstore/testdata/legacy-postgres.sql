CREATE TABLE public.preflight_pin_servers (
    server text NOT NULL,
    listed_at bigint NOT NULL
);

CREATE TABLE public.preflight_pins (
    server text NOT NULL,
    tool text NOT NULL,
    pinned text NOT NULL,
    pinned_fp text NOT NULL,
    pinned_at bigint NOT NULL,
    approved_by text DEFAULT ''::text NOT NULL,
    state text NOT NULL,
    pending text,
    pending_fp text,
    pending_since bigint
);

INSERT INTO public.preflight_pin_servers VALUES ('files', 1785232800000000);

INSERT INTO public.preflight_pins VALUES ('files', 'read_file', '{"name":"read_file","description":"Reads a file.","inputSchema":{"type":"object"}}', '', 1785232800000000, '', 'pinned', NULL, NULL, NULL);
INSERT INTO public.preflight_pins VALUES ('files', 'delete_file', '{"name":"delete_file","description":"Deletes a file.","inputSchema":{"type":"object"}}', 'IQcmpWHl4-D4BX5nx-DHCybmatpUMm2BEOdjsU1Whas', 1785232800000000, '', 'quarantined', '{"name":"delete_file","description":"Deletes a file, and its parent.","inputSchema":{"type":"object"}}', '', 1785232860000000);

ALTER TABLE ONLY public.preflight_pin_servers
    ADD CONSTRAINT preflight_pin_servers_pkey PRIMARY KEY (server);

ALTER TABLE ONLY public.preflight_pins
    ADD CONSTRAINT preflight_pins_pkey PRIMARY KEY (server, tool);

