"""The language of input files: quantities with units (``units``), YAML read with line numbers
(``yamlfile``), and the generic readers that check a key's value and name the file, key path and line
of any error (``readers``). It knows no section of a problem file; ``codesign.problem`` does."""
