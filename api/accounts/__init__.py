"""Accounts: register, sign in and out, who am I, passwords (`rest`, `actions`), and personal
access tokens (`keys`).
"""
