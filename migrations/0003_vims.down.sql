DROP INDEX IF EXISTS vnf_instances_vim_connection_info;
DROP TABLE IF EXISTS vim_auths;
DROP TABLE IF EXISTS vims;
