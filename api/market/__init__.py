"""`/api/market/*`: the market's price book (what a niche of a site sells for, from every sale
the service recorded there) and what the workspace pays on top of a purchase (its buying
costs), which make the "buy below" prices of alerts, niches and pages."""
