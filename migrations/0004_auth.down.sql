DROP TABLE IF EXISTS auth_tokens;
DROP TABLE IF EXISTS auth_clients;
