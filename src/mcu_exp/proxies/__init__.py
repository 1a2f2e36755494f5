"""proxies"""
