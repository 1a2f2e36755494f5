"""Where generations and scores are kept: one SQL interface (:mod:`.sql`) over a SQLite file
per cache (:mod:`.sqlite`) or a PostgreSQL database shared by many machines
(:mod:`.postgres`, ``cache.url``), the one-line handling of a full disk or a foreign file
(:mod:`.faults`) and ``mcu-exp cache export/import`` (:mod:`.cli`)."""
