-- A saved view may hold a query-language query (the web interface's Query view, `q=` in its URL
-- state); opened, it runs under the opener's rights like every saved view.
alter table saved_views drop constraint saved_views_view_check;
alter table saved_views add constraint saved_views_view_check check (view in ('inventory', 'changes', 'stats', 'query'));
