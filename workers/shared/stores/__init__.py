"""The artifact stores (local directory, SFTP storage host) behind one protocol."""
