"""The site generator: pages by record kind in their own modules, the computed pages (cost
core, atlas, SQL), the downloads and the build. It imports nothing from the CLI; the CLI
calls it (`rlmguide site build`)."""
